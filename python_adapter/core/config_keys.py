"""Every model config key the adapter reads, and every run-operation's arguments: their
type, default and meaning, in one place.

The source of truth for three things: `core/config.parse_config` reads a key only through
`read` (a key missing here is a programming error the unit tests catch), the configuration
reference in the docs is rendered from it (`reference_markdown`), and a model's unknown key
is caught by `unknown_key_error`. Likewise OPERATIONS for the run-operations: their
reference (`operations_markdown`), the check of what a call gives (`operation_args`) and
the services' defaults (`operation_default`). Pure.
"""
import difflib
from dataclasses import dataclass, replace
from typing import Any, Collection, Dict, Iterable, Mapping, Optional, Tuple

from python_adapter.core.retention import DEFAULT_RETAIN_COMMITS, DEFAULT_RETAIN_HOURS
from python_adapter.errors import ConfigError


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str          # as the reference shows it (a key with choices shows them instead)
    default: str       # as the reference shows it; "": shown from `value`
    doc: str
    group: str = "writing"
    dbt: bool = False      # dbt's or dbt-spark's own key, which the engine reads too
    internal: bool = False  # set by the adapter's macros, never by a user
    # the default as a model would write it (a size or a duration as text): the one place it
    # is declared (config.default_of gives it as the engine holds it). None: no default, or
    # a rule `default` describes in words
    value: Any = None
    choices: Tuple[str, ...] = ()   # the values it takes, lower case, as errors list them

    @property
    def shown_type(self) -> str:
        return ", ".join(f"`{c}`" for c in self.choices) if self.choices else self.type

    @property
    def shown_default(self) -> str:
        if self.default or self.value is None:
            return self.default or "none"
        if self.type in ("size", "duration"):
            return f"`'{self.value}'`"
        return f"`{self.value:g}`" if isinstance(self.value, float) else f"`{self.value}`"


_UPSERT_ONLY = "upsert: "
MODEL_KEYS = (
    # -- writing ------------------------------------------------------------------------
    ConfigKey("partition_by", "column or list of columns", "none",
              "Hive partition column(s)", dbt=True),
    ConfigKey("unique_key", "column or list of columns", "none",
              "column(s) identifying a row; needed by `upsert` (dbt's `merge`)", dbt=True),
    ConfigKey("incremental_strategy", "`upsert`, `insert`, `insert_overwrite`, `microbatch`",
              "`upsert` with a `unique_key`, else `insert`",
              "how an incremental run writes; dbt's names work too: `append` (= `insert`), "
              "`merge` and `delete+insert` (= `upsert`)", dbt=True),
    ConfigKey("target_file_size", "size", "",
              "largest file to write: bytes, or `'128MB'`, `'1GiB'` (MB = 1000², "
              "MiB = 1024²)", value="128MB"),
    ConfigKey("small_file_limit", "size", "100/128 of the target",
              "files below it are filled with inserts; `0` turns packing off"),
    ConfigKey("insert_split_size", "whole number", "target / bytes per row",
              "rows per new file"),
    ConfigKey("file_count", "whole number", "none",
              "static total file count; skips counting the rows of each partition"),
    ConfigKey("bytes_per_row", "number or size", "measured",
              "static estimate; skips learning it from earlier commits or a sample"),
    # exact writes the ideal file count (at most one small file per partition); range may
    # write up to one file more per partition (docs/algorithms/distribution.md)
    ConfigKey("distribution", "", "",
              "how rows are routed to files: `exact` writes the ideal file count",
              value="exact", choices=("exact", "range", "hash", "none")),
    ConfigKey("file_format", "", "",
              "the engine writes Parquet; any other format goes to dbt-spark unchanged",
              dbt=True, value="parquet", choices=("parquet",)),
    ConfigKey("on_schema_change", "", "",
              "what an incremental run does when the model's columns differ from the "
              "table's", dbt=True, value="ignore",
              choices=("ignore", "fail", "append_new_columns", "sync_all_columns")),
    ConfigKey("not_null_columns", "column or list of columns", "none",
              "column(s) that must not be null in the new rows; an enforced contract's "
              "`not_null` constraints are added to them"),
    ConfigKey("location_root", "path", "none",
              "as in dbt-spark: an external table at `location_root/<alias>`", dbt=True),
    ConfigKey("sized", "true or false", "`true`",
              "`false` gives a model dbt-spark's own `incremental` / `table` unchanged"),
    # -- upsert -------------------------------------------------------------------------
    ConfigKey("delete_column", "column", "none",
              _UPSERT_ONLY + "rows of the batch whose column is true are deleted",
              group="upsert"),
    ConfigKey("precombine_column", "column", "none",
              _UPSERT_ONLY + "a key sent twice in one batch keeps the row with the largest "
              "value; without it a repeated key fails the model", group="upsert"),
    # Hudi's GLOBAL_BLOOM vs BLOOM index
    ConfigKey("index_scope", "", "",
              _UPSERT_ONLY + "where an incoming key's old row is looked for: every file "
              "(a key may change partition), or the batch's partitions only", group="upsert",
              value="global", choices=("global", "partition")),
    ConfigKey("index_type", "", "",
              _UPSERT_ONLY + "how files are ruled out for a key: the key range each file's "
              "record keeps, or also a Parquet Bloom filter of the first `unique_key` column",
              group="upsert", value="range", choices=("range", "bloom")),
    ConfigKey("merge_update_columns", "list of columns", "none",
              _UPSERT_ONLY + "a row whose key the table holds takes only these columns",
              group="upsert", dbt=True),
    ConfigKey("merge_exclude_columns", "list of columns", "none",
              _UPSERT_ONLY + "a row whose key the table holds keeps the table's values of "
              "these columns", group="upsert", dbt=True),
    ConfigKey("incremental_predicates", "list of SQL conditions", "none",
              _UPSERT_ONLY + "only table rows that hold them are matched by an incoming key",
              group="upsert", dbt=True),
    ConfigKey("predicates", "list of SQL conditions", "none",
              "dbt-spark's name for `incremental_predicates`", group="upsert", dbt=True),
    ConfigKey("event_time", "column", "none",
              "microbatch: the column dbt cuts batches by (with dbt's `begin` and "
              "`batch_size`)", group="upsert", dbt=True),
    ConfigKey("event_time_start", "timestamp", "none",
              "microbatch: the batch's start, set by the materialization", group="upsert",
              internal=True),
    ConfigKey("event_time_end", "timestamp", "none",
              "microbatch: the batch's end, set by the materialization", group="upsert",
              internal=True),
    # -- clustering and compaction ------------------------------------------------------
    ConfigKey("cluster_by", "column or list of columns", "none",
              "columns to cluster by (post-hook, run-operation, inline)", group="clustering"),
    ConfigKey("cluster_strategy", "", "",
              "sort, or a space-filling curve over the columns' ranks", group="clustering",
              value="linear", choices=("linear", "zorder", "hilbert")),
    ConfigKey("cluster_every_n_commits", "whole number", "",
              "inline clustering after every N-th commit; `0`: only when run explicitly",
              group="clustering", value=0),
    ConfigKey("compact_every_n_commits", "whole number", "",
              "inline compaction after every N-th commit since the last clustering or "
              "compaction; `0`: only when run explicitly", group="clustering", value=0),
    ConfigKey("cluster_small_file_limit", "size", "3 x `small_file_limit`",
              "files below it are clustered (post-hook; run-operation argument)",
              group="clustering"),
    # -- commits: locking and retention -------------------------------------------------
    # a lock not renewed for this long is stale on any host
    ConfigKey("lock_lease", "duration", "",
              "how long the writer lock lives without renewal (its holder renews it while "
              "it works); durations: `'90s'`, `'5m'`, `'1h'`, or seconds", group="commits",
              value="5m"),
    ConfigKey("lock_timeout", "duration", "",
              "how long a writer that finds the table locked waits before it fails naming "
              "the holder", group="commits", value="0s"),
    ConfigKey("retain_commits", "whole number, at least 1", "",
              "the files a commit replaced are kept for this many commits, for "
              "`sized_restore` and `sized_rollback`", group="commits",
              value=DEFAULT_RETAIN_COMMITS),
    ConfigKey("retain_hours", "number of hours", "",
              "and at least this long; past both the cleaner deletes them", group="commits",
              value=DEFAULT_RETAIN_HOURS),
)
KEYS = {k.name: k for k in MODEL_KEYS}


@dataclass(frozen=True)
class Operation:
    """A run-operation and the arguments it takes besides `relation` (every one takes the
    table as `relation`); each is optional unless named in `required`."""
    name: str
    args: Tuple[ConfigKey, ...] = ()
    required: Tuple[str, ...] = ()

    def arg(self, name: str) -> ConfigKey:
        return next(a for a in self.args if a.name == name)


def _arg(key: str, **changed: Any) -> ConfigKey:
    """A model key taken as an operation's argument, with what differs there."""
    return replace(KEYS[key], group="operation", dbt=False, **changed)


_TABLES = "the table's (its last write's)"
_LOCK_TIMEOUT = ConfigKey(
    "lock_timeout", "duration", "", "how long it waits for a load's writer lock, to plan "
    "and to commit (it rewrites without it, so loads go on meanwhile)", value="10m")
_SCHEDULE_ONLY = ConfigKey(
    "schedule_only", "true or false", "`false`", "only store the plan in the timeline, for "
    "a later `sized_compact` or `sized_cluster` to execute")
OPERATIONS = (
    Operation("sized_compact", (
        ConfigKey("partitions", "list of values, or of `{column: value}` mappings", "every "
                  "partition", "the partitions to compact"),
        ConfigKey("where", "SQL condition on the partition columns", "none",
                  "the partitions to compact: those whose values hold it (with "
                  "`partitions`, both must hold)"),
        _arg("target_file_size", default=_TABLES, value=None),
        _arg("small_file_limit", default=_TABLES + ", or 100/128 of a given target",
             doc="files below it are bin-packed"),
        ConfigKey("max_groups", "whole number", "", "most groups (each rewritten as one) "
                  "in the plan", value=100),
        ConfigKey("max_bytes", "size", "none", "most bytes the plan reads"),
        ConfigKey("partial_progress", "true or false", "`false`",
                  "commit every `partial_progress_groups` groups, so an interrupted run "
                  "keeps what it finished"),
        # small enough that an interrupted run keeps most of its work, large enough that
        # commits (a lock, a few timeline files each) stay cheap
        ConfigKey("partial_progress_groups", "whole number", "", "groups per commit with "
                  "`partial_progress`", value=10),
        _SCHEDULE_ONLY, _LOCK_TIMEOUT)),
    Operation("sized_cluster", (
        _arg("cluster_by", default="a pending plan's",
             doc="columns to cluster by; without them it executes the pending plans"),
        _arg("cluster_strategy", name="strategy"),
        _arg("target_file_size", default=_TABLES, value=None),
        _arg("cluster_small_file_limit", default="3 x the table's `small_file_limit`",
             doc="files below it are clustered"),
        ConfigKey("cluster_max_bytes_per_group", "size", "2GB, or 16 x the target if larger",
                  "most bytes sorted as one group", group="operation"),
        ConfigKey("cluster_max_groups", "whole number", "", "most groups in the plan",
                  value=30),  # Hudi's
        _SCHEDULE_ONLY, _LOCK_TIMEOUT)),
    Operation("sized_clean", (
        _arg("retain_commits", default=_TABLES, value=None, doc="overrides the table's for "
             "this run"),
        _arg("retain_hours", default=_TABLES, value=None, doc="overrides the table's for "
             "this run"))),
    Operation("sized_restore", (
        ConfigKey("instant", "instant id (`sized_timeline`)", "", "the retained completed "
                  "instant whose state to bring back"),), required=("instant",)),
    Operation("sized_report", (
        ConfigKey("path", "file path", "", "where to write the HTML report"),),
        required=("path",)),
    Operation("sized_unlock", (
        ConfigKey("force", "true or false", "`false`", "break the lock (for a writer known to "
                  "be gone)"),)),
    Operation("sized_layout", (
        _arg("small_file_limit", default=_TABLES, doc="files below it are counted as small"),
        _arg("target_file_size", default=_TABLES, value=None,
             doc="the target the largest file is measured against"),
        _arg("cluster_by", default="the last clustering's",
             doc="columns whose min / max per file to show"))),
    Operation("sized_rollback"), Operation("sized_recover"), Operation("sized_repair"),
    Operation("sized_timeline"),
)
OPERATION = {o.name: o for o in OPERATIONS}


def operation_args(operation: str, given: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The arguments given to `operation` that are set (not None), or ConfigError for one it
    does not take (naming the closest, as for a model key) or a required one missing."""
    declared = OPERATION[operation]
    names = [a.name for a in declared.args]
    for key in sorted(given or {}):
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1, cutoff=TYPO_CUTOFF)
            hint = f"did you mean `{close[0]}`? " if close else ""
            takes = ", ".join(["relation", *names])
            raise ConfigError(f"{key}: not an argument of {operation}; {hint}it takes {takes}. "
                              f"Nothing was written")
    args = {k: v for k, v in (given or {}).items() if v is not None}
    for name in declared.required:
        if name not in args:
            raise ConfigError(f"{name}: {operation} needs it ({declared.arg(name).doc})")
    return args


def operation_default(operation: str, name: str) -> Any:
    """An operation argument's declared default (its `value`)."""
    return OPERATION[operation].arg(name).value


GROUPS = (("writing", "Writing"), ("upsert", "Upsert and microbatch"),
          ("clustering", "Clustering and compaction"), ("commits", "Locking and retention"))
# How close a model's unknown key must be to one of ours to be taken for a typo of it
# (difflib's ratio): `target_filesize` is 0.97 from `target_file_size`, `target_size` 0.81;
# a key of another package is rarely that close to one of ours.
TYPO_CUTOFF = 0.8


def read(raw: Mapping[str, Any], name: str) -> Any:
    """raw[name], None when unset; `name` must be a key of MODEL_KEYS."""
    if name not in KEYS:
        raise KeyError(f"config key {name!r} is read but not declared in MODEL_KEYS")
    return raw.get(name)


def unknown_key_error(keys: Iterable[str], known_elsewhere: Collection[str]) -> Optional[str]:
    """The error for the first of a model's config keys that is neither ours nor known
    elsewhere (dbt's, dbt-spark's) and close enough to one of ours to be a typo of it;
    None when there is none. A key far from all of ours is left alone: another package
    (or the user's own `meta`-like convention) may read it."""
    ours = [k.name for k in MODEL_KEYS if not k.internal]
    for key in sorted(keys):
        if key in KEYS or key in known_elsewhere:
            continue
        close = difflib.get_close_matches(key.lower(), ours, n=1, cutoff=TYPO_CUTOFF)
        if close:
            return (f"{key}: not a config key of the sized_spark adapter, dbt or dbt-spark; "
                    f"did you mean `{close[0]}`? Nothing was written")
    return None


def reference_markdown() -> str:
    """The model configuration reference of the docs, one table per group."""
    lines = ["# Model configuration", "",
             "Every key a model using the sized engine can set, generated from "
             "`python_adapter/core/config_keys.py`. Keys marked *dbt* are dbt's or "
             "dbt-spark's own, with the same meaning. Every value is checked before anything "
             "is written; a key that looks like a typo of one of these fails the model, "
             "naming the closest one.", ""]
    for group, title in GROUPS:
        lines += [f"## {title}", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        for k in MODEL_KEYS:
            if k.group == group and not k.internal:
                name = f"`{k.name}`" + (" (*dbt*)" if k.dbt else "")
                lines.append(f"| {name} | {k.shown_type} | {k.shown_default} | {k.doc} |")
        lines.append("")
    return "\n".join(lines)


def operations_markdown() -> str:
    """The operations' arguments reference of the docs, one table per operation."""
    lines = ["# Operation arguments", "",
             "The arguments of every `dbt run-operation`, generated from "
             "`python_adapter/core/config_keys.py`: each takes the table as `relation` "
             "(`schema.table`, or a table name in the target's schema), and these besides, "
             "as `--args '{relation: s.t, key: value}'`. Every value is checked before "
             "anything is written, and an argument an operation does not take fails it "
             "(`sized_compact`, `sized_cluster` and `sized_clean` name the closest one). "
             "What each operation does: [operations and "
             "tests](operations.md).", ""]
    for op in OPERATIONS:
        lines += [f"## `{op.name}`", ""]
        if not op.args:
            lines += ["No argument besides `relation`.", ""]
            continue
        lines += ["| argument | type | default | meaning |", "|---|---|---|---|"]
        for a in op.args:
            default = "required" if a.name in op.required else a.shown_default
            lines.append(f"| `{a.name}` | {a.shown_type} | {default} | {a.doc} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    # python -m python_adapter.core.config_keys > docs/reference/configuration.md
    # python -m python_adapter.core.config_keys operations > docs/reference/operation-arguments.md
    import sys
    print(operations_markdown() if sys.argv[1:] == ["operations"] else reference_markdown())
