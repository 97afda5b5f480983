"""The keys of an instant's `extra` whose values are not plain text, each with its type.

`extra` is a map of strings in the Avro record (timeline.py writes every value with str()):
numbers and lists are parsed here, once, where a key names its type, instead of `int(...)`
and `.split(",")` at each reader. A value an older or foreign writer left unparseable reads
as absent. Keys whose value is text or a "true" flag stay constants beside their writers
(timeline.DEFINES_TABLE, plans.SCHEDULED, ...).
"""
from dataclasses import dataclass
from typing import Callable, Dict, Generic, List, Mapping, Optional, TypeVar, overload

V = TypeVar("V")


@dataclass(frozen=True)
class ExtraKey(Generic[V]):
    name: str
    parse: Callable[[str], V]
    text: Callable[[V], str]

    @overload
    def get(self, extra: Mapping[str, str]) -> Optional[V]: ...

    @overload
    def get(self, extra: Mapping[str, str], default: V) -> V: ...

    def get(self, extra: Mapping[str, str], default: Optional[V] = None) -> Optional[V]:
        """The value `extra` holds under this key, `default` when absent or unreadable."""
        raw = extra.get(self.name)
        if raw is None:
            return default
        try:
            return self.parse(raw)
        except ValueError:
            return default

    def entry(self, value: V) -> Dict[str, str]:
        """{name: text}: the key's part of an extra being written."""
        return {self.name: self.text(value)}


def _int_key(name: str) -> ExtraKey[int]:
    return ExtraKey(name, int, str)


def _columns(text: str) -> List[str]:
    return [c for c in text.split(",") if c]


# the sizes a write wrote with (timeline.written_with finds the last write that recorded them)
TARGET_FILE_SIZE = _int_key("target_file_size")
SMALL_FILE_LIMIT = _int_key("small_file_limit")
# a clustering or compaction plan and its batches: the curve ("none": a compaction), the
# columns, the groups a batch commits (compact_options' partial progress)
STRATEGY = ExtraKey("strategy", str, str)
CLUSTER_BY = ExtraKey("cluster_by", _columns, ",".join)
PARTIAL_PROGRESS_GROUPS = _int_key("partial_progress_groups")
# an archived instant's summary keeps the counts of its files, not the lists
FILES_ADDED = _int_key("files_added")
FILES_REMOVED = _int_key("files_removed")


def output_files(group_id: str) -> ExtraKey[int]:
    """A plan's key of the file count one of its groups writes."""
    return _int_key(f"group.{group_id}.output_files")


def is_output_files(name: str) -> bool:
    return name.startswith("group.") and name.endswith(".output_files")
