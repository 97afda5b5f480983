"""The run-operations' arguments are declared once (core/config_keys.OPERATIONS): the macros
take exactly those (by name, or as `kwargs` the adapter checks against the declaration), the
docs' reference is rendered from them, the engine applies the defaults they state, and an
argument an operation does not take fails it, naming the closest one."""
import os
import re

import pytest

from python_adapter.core.config import cluster_options, compact_options
from python_adapter.core.config_keys import OPERATION, OPERATIONS, operation_args, operations_markdown
from python_adapter.errors import ConfigError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
REFERENCE = os.path.join(REPO, "docs", "reference", "operation-arguments.md")
MACROS = os.path.join(REPO, "macros", "operations")


def _operation_macros():
    """{operation: (its parameters, whether it hands its kwargs to the adapter)}."""
    found = {}
    for name in os.listdir(MACROS):
        with open(os.path.join(MACROS, name)) as fh:
            text = fh.read()
        for match in re.finditer(r"{%\s*macro\s+(sized_\w+)\((.*?)\)\s*%}(.*?){%\s*endmacro",
                                 text, re.S):
            params = [p.split("=")[0].strip() for p in match.group(2).split(",") if p.strip()]
            found[match.group(1)] = (params, "kwargs)" in match.group(3))
    return found


def test_every_operation_macro_takes_the_declared_arguments():
    macros = _operation_macros()
    assert {o.name for o in OPERATIONS} <= set(macros)
    for op in OPERATIONS:
        params, checked = macros[op.name]
        declared = ["relation", *(a.name for a in op.args)]
        if checked:   # the adapter checks them (operation_args) before Spark starts
            assert params == ["relation"], op.name
        else:
            assert params == declared, (op.name, params, declared)


def test_the_docs_reference_is_rendered_from_the_declaration():
    with open(REFERENCE) as fh:
        committed = fh.read()
    assert committed == operations_markdown() + "\n", (
        "docs/reference/operation-arguments.md is out of date: run python -m "
        "python_adapter.core.config_keys operations > docs/reference/operation-arguments.md")


def test_an_argument_an_operation_does_not_take_names_the_closest_and_what_it_takes():
    with pytest.raises(ConfigError) as err:
        operation_args("sized_compact", {"max_group": 3})
    assert str(err.value).startswith("max_group: not an argument of sized_compact; "
                                     "did you mean `max_groups`?")
    assert "it takes relation, partitions, where, target_file_size" in str(err.value)
    with pytest.raises(ConfigError, match="small_file_limit: not an argument of sized_cluster; "
                                          "did you mean `cluster_small_file_limit`"):
        operation_args("sized_cluster", {"small_file_limit": "1MB"})
    with pytest.raises(ConfigError, match="instant: sized_restore needs it"):
        operation_args("sized_restore", {})
    assert operation_args("sized_compact", {"max_groups": 3, "where": None}) == {"max_groups": 3}
    assert operation_args("sized_clean", None) == {}


def test_the_engine_applies_the_declared_defaults():
    compact = compact_options("64MB", partial_progress=True)
    assert compact.max_groups == OPERATION["sized_compact"].arg("max_groups").value
    assert compact.partial_progress_groups == \
        OPERATION["sized_compact"].arg("partial_progress_groups").value
    cluster = cluster_options(["a"])
    assert cluster.max_groups == OPERATION["sized_cluster"].arg("cluster_max_groups").value
    assert cluster.strategy == OPERATION["sized_cluster"].arg("strategy").value
    # every named argument of the clustering options is one of sized_cluster's
    names = set(cluster_options.__code__.co_varnames[:cluster_options.__code__.co_argcount])
    declared = {a.name for a in OPERATION["sized_cluster"].args}
    assert names - {"write_small_file_limit"} <= declared | {"strategy"}


def test_every_run_operation_in_the_docs_gives_arguments_the_operation_takes():
    import yaml

    pattern = re.compile(r"run-operation (sized_\w+) --args '(\{.*?\})'")
    pages = [os.path.join(REPO, "README.md")] + [
        os.path.join(root, name) for root, _dirs, files in os.walk(os.path.join(REPO, "docs"))
        for name in files if name.endswith(".md")]
    seen = 0
    for page in pages:
        with open(page) as fh:
            for operation, args in pattern.findall(fh.read()):
                given = yaml.safe_load(args.replace("...", ""))
                if operation in OPERATION and "<" not in args:
                    given.pop("relation", None)
                    operation_args(operation, given)   # raises on one it does not take
                    seen += 1
    assert seen >= 15
