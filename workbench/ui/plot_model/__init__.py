"""The plots' Qt-free numbers: `data` (units, ticks, rows, roofline, decimation), `image`, `marks`."""
