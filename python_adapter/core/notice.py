"""Which of the engine's log lines a user should see at the default level. Pure.

The engine hands its log lines to a `log` callable as plain strings: phase lines (counting,
planning, writing, publishing) that a dbt user reads with `--debug`. A line the user should
see in a plain run (an unfinished write rolled back, a stale lock broken, a wait for the
lock, a table service skipped or resumed) is a `Notice`, a str that says so; the dbt layer
logs it at info, the rest at debug. Callers that print everything (tests, benchmarks) need
not know.
"""


class Notice(str):
    """A log line for dbt's default level."""
