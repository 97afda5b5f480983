"""The model config contract of `sized_incremental`, validated before anything is written.

Pure: takes the raw config dict dbt hands over, returns a frozen `SizedConfig`, or raises
`ConfigError` naming the key and the bad value. Every key is read through
`config_keys.read`, so each is declared once, with its type, default and meaning, in
`config_keys.MODEL_KEYS` (the source of the configuration reference).
"""
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Tuple, Union

from python_adapter.core.config_keys import KEYS, operation_default, read
from python_adapter.core.sizes import parse_duration, parse_size
from python_adapter.errors import ConfigError

STRATEGIES = ("upsert", "insert", "insert_overwrite", "microbatch")
# dbt's names for the same strategies (dbt's `incremental` and dbt-spark's): append adds
# rows; merge and delete+insert replace the rows of the incoming keys.
STRATEGY_ALIASES = {"append": "insert", "merge": "upsert", "delete+insert": "upsert"}


def default_of(name: str) -> Any:
    """A model key's default as its declaration (config_keys.MODEL_KEYS) gives it, as the
    engine holds it: a size in bytes, a duration in seconds."""
    key = KEYS[name]
    if key.value is not None and key.type == "size":
        return parse_size(key.value)
    if key.value is not None and key.type == "duration":
        return parse_duration(key.value)
    return key.value


CLUSTER_STRATEGIES = KEYS["cluster_strategy"].choices
DEFAULT_TARGET = KEYS["target_file_size"].value
# Hudi's defaults put the small-file limit at ~78% of the max file size (100MB of 128MB);
# keep that ratio when only the target is set, so setting one key never makes an invalid pair.
SMALL_FILE_RATIO = 100 / 128


@dataclass(frozen=True)
class SizedConfig:
    partition_by: Tuple[str, ...] = ()
    unique_key: Tuple[str, ...] = ()
    incremental_strategy: str = "insert"
    target_file_size: int = default_of("target_file_size")
    small_file_limit: int = int(default_of("target_file_size") * SMALL_FILE_RATIO)
    insert_split_size: Optional[int] = None
    file_count: Optional[int] = None
    bytes_per_row: Optional[float] = None
    distribution: str = default_of("distribution")
    cluster_by: Tuple[str, ...] = ()
    cluster_strategy: str = default_of("cluster_strategy")
    cluster_every_n_commits: int = default_of("cluster_every_n_commits")
    compact_every_n_commits: int = default_of("compact_every_n_commits")
    delete_column: Optional[str] = None
    precombine_column: Optional[str] = None
    on_schema_change: str = default_of("on_schema_change")
    index_scope: str = default_of("index_scope")
    index_type: str = default_of("index_type")  # upsert: how files are ruled out for a key
    file_format: str = default_of("file_format")
    lock_lease: float = default_of("lock_lease")      # seconds a lock lives without renewal
    lock_timeout: float = default_of("lock_timeout")  # seconds a writer waits for a held lock
    retain_commits: int = default_of("retain_commits")  # set-aside files kept this many commits
    retain_hours: float = default_of("retain_hours")    # and at least this long
    merge_update_columns: Tuple[str, ...] = ()     # upsert: a matched row takes only these
    merge_exclude_columns: Tuple[str, ...] = ()    # upsert: a matched row keeps these
    incremental_predicates: Tuple[str, ...] = ()   # upsert: only table rows they hold match
    event_time: Optional[str] = None               # microbatch: the column batches cut by
    batch_window: Optional[Tuple[str, str]] = None  # microbatch: this batch's [start, end)
    not_null_columns: Tuple[str, ...] = ()     # null in none of the new rows (contract)
    extra: dict = field(default_factory=dict, compare=False)


def _column_list(key, value):
    if value is None or value == "" or value == []:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ConfigError(f"{key}: expected a column name or a list of column names, got {value!r}")


def _choice(key, value, allowed, default):
    if value is None:
        return default
    if not isinstance(value, str) or value.lower() not in allowed:
        raise ConfigError(f"{key}: unknown value {value!r}; expected one of {', '.join(allowed)}")
    return value.lower()


def _declared_choice(raw, name):
    """A key with choices, read and checked against its declaration, its default if unset."""
    return _choice(name, read(raw, name), KEYS[name].choices, default_of(name))


def _size(key, value, default=None):
    if value is None:
        return default
    try:
        return parse_size(value, key)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _duration(key, value, default, minimum=0.0):
    if value is None:
        return default
    try:
        seconds = parse_duration(value, key)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if seconds < minimum:
        raise ConfigError(f"{key}: must be at least {minimum:g}s, got {value!r}")
    return seconds


def _positive_int(key, value, allow_zero=False):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        else:
            raise ConfigError(f"{key}: expected a whole number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"{key}: must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return value


def _hours(key, value, default):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{key}: expected a number of hours, got {value!r}")
    try:
        hours = float(value)
    except ValueError:
        raise ConfigError(f"{key}: expected a number of hours, got {value!r}") from None
    if not hours >= 0:
        raise ConfigError(f"{key}: must be >= 0, got {value!r}")
    return hours


# dbt's merge aliases the table DBT_INTERNAL_DEST; a predicate on the table's rows may say so.
_DEST_ALIAS = re.compile(r"\bDBT_INTERNAL_DEST\s*\.\s*", re.IGNORECASE)


def _predicates(raw):
    """incremental_predicates (or dbt-spark's `predicates`): SQL conditions on the table's
    rows, `DBT_INTERNAL_DEST.` prefixes dropped; the incoming rows (DBT_INTERNAL_SOURCE)
    cannot be named, there is no join condition to put them in."""
    key = "incremental_predicates" if read(raw, "incremental_predicates") else "predicates"
    value = read(raw, key)
    if value is None or value == [] or value == "":
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(p, str) and p.strip()
                                                       for p in items):
        raise ConfigError(f"{key}: expected a list of SQL conditions, got {value!r}")
    for p in items:
        if re.search(r"\bDBT_INTERNAL_SOURCE\b", p, re.IGNORECASE):
            raise ConfigError(f"{key}: {p!r} names DBT_INTERNAL_SOURCE; a predicate here is "
                              f"a condition on the table's rows (DBT_INTERNAL_DEST) only")
    return tuple(_DEST_ALIAS.sub("", p).strip() for p in items)


def _batch_window(raw):
    """(start, end) of a microbatch batch as dbt renders them ('2025-01-02 00:00:00+00:00'),
    None outside a batch."""
    start, end = read(raw, "event_time_start"), read(raw, "event_time_end")
    if start is None and end is None:
        return None
    if not (isinstance(start, str) and isinstance(end, str) and start < end):
        raise ConfigError(f"event_time_start / event_time_end: expected a window of two "
                          f"timestamps, got {start!r} / {end!r}")
    return start, end


def kept_on_update(config: "SizedConfig", columns: Sequence[str]) -> Tuple[str, ...]:
    """The columns a row matched by an upsert keeps from the table (merge_update_columns:
    all but those and the key; merge_exclude_columns: those), in `columns`' spelling."""
    if config.merge_update_columns:
        taken = {c.lower() for c in (*config.merge_update_columns, *config.unique_key)}
        return tuple(c for c in columns if c.lower() not in taken)
    excluded = {c.lower() for c in config.merge_exclude_columns}
    return tuple(c for c in columns if c.lower() in excluded)


def retention_values(retain_commits: Any = None, retain_hours: Any = None) -> Tuple[int, float]:
    """(retain_commits, retain_hours) validated: at least one commit is kept (the last
    commit's set-aside files are what sized_rollback restores)."""
    commits = _positive_int("retain_commits", retain_commits)
    return (default_of("retain_commits") if commits is None else commits,
            _hours("retain_hours", retain_hours, default_of("retain_hours")))


def _optional_name(key, value):
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a column name, got {value!r}")
    return value


def parse_config(raw: Optional[Mapping[str, Any]]) -> SizedConfig:
    """Validate the raw model config (a dict) into a SizedConfig."""
    raw = {k: v for k, v in dict(raw or {}).items()}
    unique_key = _column_list("unique_key", read(raw, "unique_key"))
    default_strategy = "upsert" if unique_key else "insert"
    named = read(raw, "incremental_strategy")
    strategy = _choice("incremental_strategy", STRATEGY_ALIASES.get(
        named.lower() if isinstance(named, str) else named, named),
        (*STRATEGIES, *STRATEGY_ALIASES), default_strategy)
    if strategy == "upsert" and not unique_key:
        raise ConfigError(f"unique_key: incremental_strategy {named or 'upsert'!r} needs a "
                          f"unique_key, got none")
    index_type = _declared_choice(raw, "index_type")
    if index_type == "bloom" and not unique_key:
        raise ConfigError("index_type: 'bloom' filters files on the first unique_key column; "
                          "set unique_key, or leave index_type at 'range'")
    event_time = _optional_name("event_time", read(raw, "event_time"))
    if strategy == "microbatch" and not event_time:
        raise ConfigError("event_time: incremental_strategy 'microbatch' needs an event_time "
                          "column (and dbt's begin and batch_size), got none")

    target = _size("target_file_size", read(raw, "target_file_size"),
                   default_of("target_file_size"))
    if target <= 0:
        raise ConfigError(f"target_file_size: must be > 0, got {read(raw, 'target_file_size')!r}")
    small = _size("small_file_limit", read(raw, "small_file_limit"), int(target * SMALL_FILE_RATIO))
    if small > target:
        raise ConfigError(
            f"small_file_limit: {read(raw, 'small_file_limit')!r} is larger than "
            f"target_file_size {read(raw, 'target_file_size') or DEFAULT_TARGET!r}; "
            f"files below small_file_limit are filled up to target_file_size"
        )
    bytes_per_row = read(raw, "bytes_per_row")
    if bytes_per_row is not None:
        if isinstance(bytes_per_row, (int, float)) and not isinstance(bytes_per_row, bool):
            bytes_per_row = float(bytes_per_row)
        else:
            bytes_per_row = float(_size("bytes_per_row", bytes_per_row))
        if not bytes_per_row > 0:
            raise ConfigError(f"bytes_per_row: must be > 0, got {read(raw, 'bytes_per_row')!r}")

    file_format = _declared_choice(raw, "file_format")
    cluster_every = _positive_int("cluster_every_n_commits", read(raw, "cluster_every_n_commits"),
                                  allow_zero=True) or default_of("cluster_every_n_commits")
    cluster_by = _column_list("cluster_by", read(raw, "cluster_by"))
    if cluster_every and not cluster_by:
        raise ConfigError("cluster_by: cluster_every_n_commits is set but cluster_by names no columns")

    retain_commits, retain_hours = retention_values(read(raw, "retain_commits"),
                                                    read(raw, "retain_hours"))
    update_columns = _column_list("merge_update_columns", read(raw, "merge_update_columns"))
    exclude_columns = _column_list("merge_exclude_columns", read(raw, "merge_exclude_columns"))
    if update_columns and exclude_columns:
        raise ConfigError(f"merge_update_columns: {list(update_columns)} given together with "
                          f"merge_exclude_columns {list(exclude_columns)}; give one of them")
    return SizedConfig(
        partition_by=_column_list("partition_by", read(raw, "partition_by")),
        unique_key=unique_key,
        incremental_strategy=strategy,
        target_file_size=target,
        small_file_limit=small,
        insert_split_size=_positive_int("insert_split_size", read(raw, "insert_split_size")),
        file_count=_positive_int("file_count", read(raw, "file_count")),
        bytes_per_row=bytes_per_row,
        distribution=_declared_choice(raw, "distribution"),
        cluster_by=cluster_by,
        cluster_strategy=_declared_choice(raw, "cluster_strategy"),
        cluster_every_n_commits=cluster_every,
        compact_every_n_commits=_positive_int("compact_every_n_commits",
                                              read(raw, "compact_every_n_commits"),
                                              allow_zero=True) or default_of(
                                                  "compact_every_n_commits"),
        delete_column=_optional_name("delete_column", read(raw, "delete_column")),
        precombine_column=_optional_name("precombine_column", read(raw, "precombine_column")),
        on_schema_change=_declared_choice(raw, "on_schema_change"),
        index_scope=_declared_choice(raw, "index_scope"),
        index_type=index_type,
        file_format=file_format,
        lock_lease=_duration("lock_lease", read(raw, "lock_lease"), default_of("lock_lease"),
                             minimum=1),
        lock_timeout=_duration("lock_timeout", read(raw, "lock_timeout"),
                               default_of("lock_timeout")),
        retain_commits=retain_commits,
        retain_hours=retain_hours,
        merge_update_columns=update_columns,
        merge_exclude_columns=exclude_columns,
        incremental_predicates=_predicates(raw),
        event_time=event_time,
        batch_window=_batch_window(raw),
        not_null_columns=_column_list("not_null_columns", read(raw, "not_null_columns")),
    )


def check_columns(config: SizedConfig, columns: Sequence[str]) -> None:
    """Every column the config names must exist in the model; raise naming the key if not."""
    present = {c.lower() for c in columns}
    named = [
        ("partition_by", config.partition_by),
        ("unique_key", config.unique_key),
        ("cluster_by", config.cluster_by),
        ("delete_column", (config.delete_column,) if config.delete_column else ()),
        ("precombine_column", (config.precombine_column,) if config.precombine_column else ()),
        ("merge_update_columns", config.merge_update_columns),
        ("merge_exclude_columns", config.merge_exclude_columns),
        ("event_time", (config.event_time,) if config.event_time else ()),
        ("not_null_columns", config.not_null_columns),
    ]
    for key, cols in named:
        missing = [c for c in cols if c.lower() not in present]
        if missing:
            raise ConfigError(
                f"{key}: column(s) {', '.join(missing)} not found in the model; "
                f"its columns are {', '.join(columns)}"
            )
    if config.partition_by and len(config.partition_by) >= len(columns):
        raise ConfigError(
            f"partition_by: {list(config.partition_by)} leaves no data column; "
            f"a Parquet table needs at least one column outside its partitions"
        )


CLUSTER_GROUP_BYTES = 2 * 1000**3  # Hudi's clustering max bytes per group


@dataclass(frozen=True)
class ClusterOptions:
    """A clustering plan's options (Hudi's size-based plan strategy)."""
    cluster_by: Tuple[str, ...]
    strategy: str
    target_file_size: int
    small_file_limit: int      # Hudi: 300MB, above the write-time 100MB
    max_bytes_per_group: int
    max_groups: int            # Hudi: 30


def cluster_options(cluster_by: Union[str, Sequence[str]], strategy: str = "linear",
                    target_file_size: Optional[Union[int, float, str]] = None,
                    cluster_small_file_limit: Optional[Union[int, float, str]] = None,
                    cluster_max_bytes_per_group: Optional[Union[int, float, str]] = None,
                    cluster_max_groups: Optional[int] = None,
                    write_small_file_limit: Optional[int] = None) -> ClusterOptions:
    """Validated clustering options (named as sized_cluster's arguments, config_keys.
    OPERATIONS), errors naming the key as for model config; defaults scale from the table's
    target like Hudi's do from 1GB."""
    if isinstance(cluster_by, str):
        cluster_by = [cluster_by]
    if not cluster_by or not all(isinstance(c, str) and c for c in cluster_by):
        raise ConfigError(f"cluster_by: name at least one column to cluster by, got {cluster_by!r}")
    strategy = _choice("cluster_strategy", strategy, CLUSTER_STRATEGIES, "linear")
    target = _size("target_file_size", target_file_size, parse_size(DEFAULT_TARGET))
    if target <= 0:
        raise ConfigError(f"target_file_size: must be > 0, got {target_file_size!r}")
    small = _size("cluster_small_file_limit", cluster_small_file_limit,
                  3 * (write_small_file_limit or int(target * SMALL_FILE_RATIO)))
    # A group is sorted as one, so a table below the bound is one sorted run: the bound is
    # what Spark sorts comfortably in one job (Hudi's 2GB), not a multiple of a small target
    # (16 x 512KB cut a 14MB table into two runs, each sorted alone). Large targets keep
    # 16 files a group.
    group = _size("cluster_max_bytes_per_group", cluster_max_bytes_per_group,
                  max(CLUSTER_GROUP_BYTES, 16 * target))
    if group < target:
        raise ConfigError(f"cluster_max_bytes_per_group: {cluster_max_bytes_per_group!r} is "
                          f"smaller than target_file_size {target_file_size!r}")
    groups = _positive_int("cluster_max_groups", cluster_max_groups) or \
        operation_default("sized_cluster", "cluster_max_groups")
    return ClusterOptions(tuple(cluster_by), strategy, target, small, group, groups)


@dataclass(frozen=True)
class CompactOptions:
    """A compaction plan's options: files below small_file_limit are bin-packed into files
    of target_file_size; files above SPLIT_RATIO x target are split (Iceberg's rule)."""
    target_file_size: int
    small_file_limit: int
    max_bytes_per_group: int
    max_groups: int
    max_bytes: Optional[int] = None   # bytes read per run; None: no bound
    # partial progress: groups per commit, so an interrupted run keeps the batches it
    # committed; None: the whole plan is one commit
    partial_progress_groups: Optional[int] = None


DEFAULT_PARTIAL_PROGRESS_GROUPS = operation_default("sized_compact", "partial_progress_groups")


def compact_options(target_file_size: Optional[Union[int, float, str]] = None,
                    small_file_limit: Optional[Union[int, float, str]] = None,
                    max_groups: Optional[int] = None,
                    max_bytes: Optional[Union[int, float, str]] = None,
                    write_small_file_limit: Optional[int] = None,
                    partial_progress: Any = None,
                    partial_progress_groups: Optional[int] = None) -> CompactOptions:
    """Validated compaction options, errors naming the key; the limit defaults to the
    table's own small_file_limit (write_small_file_limit) and each group holds up to 16
    target files' worth, so one partition's small files are usually one group."""
    target = _size("target_file_size", target_file_size, parse_size(DEFAULT_TARGET))
    if target <= 0:
        raise ConfigError(f"target_file_size: must be > 0, got {target_file_size!r}")
    small = _size("small_file_limit", small_file_limit,
                  write_small_file_limit or int(target * SMALL_FILE_RATIO))
    if small <= 0:
        raise ConfigError(f"small_file_limit: must be > 0, got {small_file_limit!r}")
    limit = _size("max_bytes", max_bytes)
    if limit is not None and limit <= 0:
        raise ConfigError(f"max_bytes: must be > 0, got {max_bytes!r}")
    groups = _positive_int("max_groups", max_groups) or \
        operation_default("sized_compact", "max_groups")
    return CompactOptions(target, small, 16 * target, groups, limit,
                          _batch_groups(partial_progress, partial_progress_groups))


def _batch_groups(partial_progress, partial_progress_groups):
    """Groups per commit: None without partial progress."""
    enabled = _flag("partial_progress", partial_progress)
    groups = _positive_int("partial_progress_groups", partial_progress_groups)
    if groups is not None and not enabled:
        raise ConfigError(f"partial_progress_groups: {partial_progress_groups!r} given, but "
                          f"partial_progress is not true; set partial_progress: true")
    return (groups or DEFAULT_PARTIAL_PROGRESS_GROUPS) if enabled else None


def _flag(key, value):
    """A yes / no option: a boolean, or its text as YAML and dbt's --vars give it."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(f"{key}: expected true or false, got {value!r}")
