"""Live mode (Qt-free): save → rebuild → rerun (`live.py`), the last good result per backend × device
kept across failures (`last_good.py`)."""
