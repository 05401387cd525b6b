"""The rounds of a peers' run (bench/peers/heads_peers.py, decode_peers.py) as the report tools read them.

A run is {"runs": [{"case", "engine", "round", …measures}]}: every case, every engine, round by round.
heads_report.py and decode_report.py take each figure as a spread over the rounds, never a single one.
"""
import json
import os
import statistics


def spread(values):
    """(median, lowest, highest), or None for no values."""
    return (statistics.median(values), min(values), max(values)) if values else None


def by_round(data, columns):
    """{(case, column): {round: run}}; `columns` maps an engine to the column it shares, if any."""
    table = {}
    for run in data["runs"]:
        column = columns.get(run["engine"], run["engine"])
        table.setdefault((run["case"], column), {})[run["round"]] = run
    return table


def fmt(s, digits=1, suffix=""):
    """A spread as "median [lowest, highest]"."""
    median, low, high = s
    return f"{median:.{digits}f}{suffix} [{low:.{digits}f}, {high:.{digits}f}]"


def write_json(path, data):
    """data to the JSON file at path, written whole and then renamed: never a half-written docs/bench.json."""
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(partial, path)
