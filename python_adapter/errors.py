"""The engine's one error hierarchy. A SizedError is the user's to act on (a config value, a
table changed behind its commits, another writer): the dbt layer shows its message as the
model's failure. Anything else that escapes the engine is a bug, and is left to surface as
one rather than be reported as the user's mistake."""


class SizedError(Exception):
    """Base of every error the engine raises for the user to act on."""


class ConfigError(SizedError, ValueError):
    """A config value (of a model or an operation) is invalid; names the key and the value."""


class SchemaChangeError(ConfigError):
    """The model's columns changed and on_schema_change does not allow it."""


class WriteError(SizedError):
    """A write cannot go ahead; the table is left as it was."""


class DamagedTableError(WriteError):
    """Files the table's commits recorded were deleted or changed outside them."""


class UnreadableFileError(WriteError):
    """Spark cannot read one of the table's files."""


class PythonModelError(WriteError):
    """A Python model's own code failed, or returned no DataFrame; nothing was written."""


class FilesystemError(WriteError):
    """The filesystem refused a step (read-only, full, permission denied): the table keeps
    the rows of its last completed commit; the next run (or sized_recover) finishes the
    cleanup of what this one left."""


class ConnectionLostError(WriteError):
    """The Spark Connect server stopped answering while the engine worked on a table."""


class LockError(SizedError):
    """Another writer holds the table's lock."""


class LockLostError(LockError):
    """This writer's lock was taken over (its lease expired, or it was broken) while it
    worked: it must not touch the table any more; the new holder rolls its work back."""


class TimelineError(SizedError):
    """The timeline cannot be read; it is never silently rewritten."""


class UnreadableInstantError(TimelineError):
    """The file of a completed instant cannot be decoded (truncated, overwritten): what the
    table holds cannot be read from its timeline. Says the file's path and the two ways on:
    sized_repair or a full refresh, both of which set the file aside (`quarantine`)."""

    def __init__(self, path: str, detail: str, quarantine: str,
                 relation: str = "<schema.table>") -> None:
        self.path, self.detail, self.quarantine = path, detail, quarantine
        super().__init__(
            f"timeline file {path} is corrupt or unreadable ({detail}): it records a completed "
            f"commit, so what the table holds cannot be read from its timeline, and nothing "
            f"was written. Record the table as it is now, the file set aside to {quarantine}/ "
            f"(the rows of files it no longer explains are listed as lost or gained): dbt "
            f"run-operation sized_repair --args '{{relation: {relation}}}'; or rebuild it with "
            f"--full-refresh, which sets the file aside too and starts the table's history "
            f"over from the new rows")

    def of(self, relation: str) -> "UnreadableInstantError":
        """The same error naming the table as the user does (schema.table)."""
        return UnreadableInstantError(self.path, self.detail, self.quarantine, relation)


class ConstraintError(WriteError):
    """The new rows break a constraint of the model's contract (a not_null column holds
    nulls); it is checked before anything is written."""
