"""The time of a row, a seed and a cutoff in a database graph: int32, as `TypedGraph`'s.

An integer time column (a season, a day number) is compared as it is. A date or timestamp
becomes seconds since 1970-01-01 UTC, rounded up to the whole second, so `time <= t` holds
exactly when the row is at or before second `t`: against whole-second seed times and cutoffs
nothing of the timestamp's resolution is lost (a row half a second after a seed is after it).
A seed time returned as a date or timestamp is rounded down, so a seed never sees a row of its
own second that comes after it. Dates and timestamps must lie in int32's seconds, 1901-12-13
20:45:52 to 2038-01-19 03:14:07 UTC. A row whose time is NULL is timed `NEVER` (after every
seed, as RelBench's `time <= t` drops it) or, where the caller says so, `ALWAYS` (known at every
time, as the rows of a table without a time column). Host NumPy.
"""

from __future__ import annotations

import numpy as np

ALWAYS = int(np.iinfo(np.int32).min)
NEVER = int(np.iinfo(np.int32).max)
DATETIME_RANGE = "1901-12-13 20:45:52 to 2038-01-19 03:14:07 UTC"


def seconds(values: np.ndarray, round_up: bool) -> np.ndarray:
    """Datetime64 `values` `[N]` as whole seconds since 1970-01-01, int64 `[N]`, rounded up
    (rows) or down (seeds); integer `values` as int64, unchanged. Host."""
    values = np.ma.getdata(values)
    if not np.issubdtype(values.dtype, np.datetime64):
        return values.astype(np.int64)
    unit = np.datetime_data(values.dtype)[0]
    if np.timedelta64(1, unit) > np.timedelta64(1, "s"):  # days: whole seconds already
        values, unit = values.astype("datetime64[s]"), "s"
    per_second = int(np.timedelta64(1, "s") // np.timedelta64(1, unit))
    ticks = values.view(np.int64)
    return -(-ticks // per_second) if round_up else ticks // per_second


def row_times(values, null_time_known: bool) -> np.ndarray:
    """A fetched time column `[N]` (integers, dates or timestamps; NULL masked) as row times,
    int32 `[N]`: seconds rounded up for dates and timestamps, NULL as `ALWAYS` where
    `null_time_known` else `NEVER`. Host; the values must fit int32 (`check_schema` checks)."""
    missing = np.ma.getmaskarray(values)
    filled = np.where(missing, 0, seconds(values, round_up=True))
    return np.where(missing, ALWAYS if null_time_known else NEVER, filled).astype(np.int32)


def feature_seconds(values) -> np.ndarray:
    """Datetime64 `values` `[N]` as float64 seconds since 1970-01-01 (NULL kept masked), at
    their full resolution: a date or timestamp column's numerical feature. Host."""
    data = np.ma.getdata(values)
    unit = np.datetime_data(data.dtype)[0]
    ticks = data.view(np.int64).astype(np.float64)
    scaled = ticks * (np.timedelta64(1, unit) / np.timedelta64(1, "s"))
    return np.ma.masked_array(scaled, np.ma.getmaskarray(values))
