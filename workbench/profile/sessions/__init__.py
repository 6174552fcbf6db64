"""The sessions database (Qt-free): recording runs, reading them back, comparing and exporting.

`store.py` owns the SQLite file; `record.py` turns a run report into rows and `recorder.py` records
on a thread of its own; `compare.py`, `comparable.py`, `noise.py` and `conditions.py` read runs
against each other; `export.py`, `bundle_check.py` move them in and out of the database.
"""
