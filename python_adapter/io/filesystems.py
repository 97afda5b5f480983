"""The engine's filesystem for a session: HadoopFS (py4j into the driver's JVM) in a session
with a JVM, ConnectFS (the Connect server's extension) over `method: connect`. Both have
one interface; the table layer and the write path never ask which they hold."""
from typing import Any, Union

from python_adapter.io.connect_client import is_connect
from python_adapter.io.connect_fs import ConnectFS
from python_adapter.io.fs import HadoopFS


def filesystem(spark: Any) -> Union[HadoopFS, ConnectFS]:
    return ConnectFS(spark) if is_connect(spark) else HadoopFS(spark)
