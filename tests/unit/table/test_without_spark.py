"""The table layer and LocalFS import where pyspark and py4j cannot be imported at all (a
process that blocks them): what the fast tier needs to run without Spark installed.
"""
import os
import pathlib
import subprocess
import sys


BLOCKED = """
import importlib.abc, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ImportError(f"{name} is blocked: the table layer must not need it")
        return None

sys.meta_path.insert(0, Blocked())
import python_adapter.io.local_fs, python_adapter.table.transaction
import python_adapter.table.archive, python_adapter.table.plans
"""


def test_the_table_layer_imports_without_pyspark_or_py4j():
    root = pathlib.Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, timeout=60)
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1]
