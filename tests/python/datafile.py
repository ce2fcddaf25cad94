# A handler with a data file of its own (the function's files beside the standard library): the
# table is read once, before the snapshot; each request is a key looked up in it.
import csv
import os

with open(os.environ.get("EMBER_DATA", "/data/table.csv"), newline="") as f:
    TABLE = {row["key"]: row for row in csv.DictReader(f)}


def handler(input):
    row = TABLE.get(input.strip())
    return {"rows": len(TABLE), "found": row}
