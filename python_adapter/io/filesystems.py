"""The engine's filesystem for a session, from its backend (io/backend.py): HadoopFS (py4j
into the driver's JVM) in a session with a JVM, ConnectFS (the Connect server's extension)
over `method: connect`. Both have one interface (io/interfaces.FileSystem); the table layer
and the write path never ask which they hold."""
from typing import Any

from python_adapter.io.backend import backend
from python_adapter.io.interfaces import FileSystem


def filesystem(spark: Any) -> FileSystem:
    return backend(spark).fs
