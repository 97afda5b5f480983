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


class LockError(SizedError):
    """Another writer holds the table's lock."""


class LockLostError(LockError):
    """This writer's lock was taken over (its lease expired, or it was broken) while it
    worked: it must not touch the table any more; the new holder rolls its work back."""


class TimelineError(SizedError):
    """The timeline cannot be read; it is never silently rewritten."""


class ConstraintError(WriteError):
    """The new rows break a constraint of the model's contract (a not_null column holds
    nulls); it is checked before anything is written."""
