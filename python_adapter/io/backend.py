"""One backend per session (the interfaces are in io/interfaces.py): the kind of session is
asked here, once per session; no other module looks at it."""
import weakref
from typing import Any, Dict, Tuple

from python_adapter.io.connect_client import is_connect
from python_adapter.io.interfaces import Backend

_BACKENDS: "weakref.WeakKeyDictionary[Any, Backend]" = weakref.WeakKeyDictionary()
_BY_ID: Dict[int, Tuple[Any, Backend]] = {}   # sessions that take no weak reference


def backend(spark: Any) -> Backend:
    """The session's backend, made on first use."""
    try:
        found = _BACKENDS.get(spark)
    except TypeError:   # not weakly referenceable: kept with the session it belongs to
        held = _BY_ID.get(id(spark))
        found = held[1] if held is not None and held[0] is spark else None
    if found is None:
        found = _make(spark)
        try:
            _BACKENDS[spark] = found
        except TypeError:
            _BY_ID[id(spark)] = (spark, found)
    return found


def _make(spark: Any) -> Backend:
    # imported on use: a session install need not load the Connect client's modules
    if is_connect(spark):
        from python_adapter.io.connect_backend import connect_backend
        return connect_backend(spark)
    from python_adapter.io.session_backend import session_backend
    return session_backend(spark)
