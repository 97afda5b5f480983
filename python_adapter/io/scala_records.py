"""Scala case class records of Spark's catalog built from Python through py4j: a copy with
some fields changed, a new record with the rest at their defaults. The number of fields
differs between Spark versions, so both are found by reflection, never spelled out; the
defaults are fetched once per record or class, as each py4j call is a round trip."""
from typing import Any, Dict, List, Mapping, Sequence

# {class name: the Java types of its copy's parameters}: looking the method up walks the
# class's methods one py4j round trip each (~70 ms for a CatalogTable), once per process.
_copy_parameters: Dict[str, List[str]] = {}


def copy_parameter_types(record: Any) -> List[str]:
    """The class names of the parameters of record.copy, in order."""
    cls = record.getClass()
    name = cls.getName()
    if name not in _copy_parameters:
        copy = next(m for m in cls.getMethods() if m.getName() == "copy")
        _copy_parameters[name] = [t.getName() for t in copy.getParameterTypes()]
    return _copy_parameters[name]


class CaseCopy:
    """record.copy(...) with the fields at given positions changed (0 is the first)."""

    def __init__(self, record: Any) -> None:
        self.record = record
        self.fields: List[Any] = [getattr(record, f"copy$default${i}")()
                                  for i in range(1, len(copy_parameter_types(record)) + 1)]

    def __call__(self, changes: Mapping[int, Any]) -> Any:
        args = list(self.fields)
        for position, value in changes.items():
            args[position] = value
        return self.record.copy(*args)


def case_copy(record: Any, changes: Mapping[int, Any]) -> Any:
    return CaseCopy(record)(changes)


class CaseNew:
    """new class_name(leading fields..., the companion's defaults for the others)."""

    def __init__(self, jvm: Any, class_name: str, leading: int) -> None:
        arity = len(jvm.java.lang.Class.forName(class_name).getConstructors()[0]
                    .getParameterTypes())
        self.cls = jvm
        for part in class_name.split("."):
            self.cls = getattr(self.cls, part)
        self.defaults = [getattr(self.cls, f"apply$default${i}")()
                         for i in range(leading + 1, arity + 1)]

    def __call__(self, leading: Sequence[Any]) -> Any:
        return self.cls(*leading, *self.defaults)
