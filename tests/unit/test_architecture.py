"""The package's architecture (docs/design.md), checked on its source: layers whose imports
point only down, a pure core, no import cycle, no private name imported from another
module, short parameter lists, and a dbt plugin that calls the engine through one API."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python_adapter"
# Lower layers first: a module may import its own layer and those before it. errors is
# the one hierarchy every layer raises from.
LAYERS = ["errors", "core", "io", "table", "spark", "report", "api", "cli"]
MAX_PARAMETERS = 7


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts)
        yield (name[: -len(".__init__")] if name.endswith(".__init__") else name), path


def _imports(path):
    """(module imported, names imported from it) of every import in a file."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, tuple(a.name for a in node.names)


def _layer(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _engine_imports(path):
    """Modules of the package a file imports (`from python_adapter.x import y` may name a
    module y of package x)."""
    known = {name for name, _ in _modules()}
    for module, names in _imports(path):
        if not module.startswith("python_adapter"):
            continue
        subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
        yield from subs or [module]


@pytest.mark.parametrize("name, path", [m for m in _modules() if _layer(m[0]) == "core"])
def test_core_is_pure(name, path):
    foreign = [m for m, _ in _imports(path)
               if m.split(".")[0] in ("pyspark", "py4j", "fastavro")]
    assert not foreign, f"{name} imports {foreign}"


@pytest.mark.parametrize("name, path", list(_modules()))
def test_imports_point_down(name, path):
    layer = _layer(name)
    if layer not in LAYERS:
        return  # python_adapter/__init__.py
    allowed = set(LAYERS[: LAYERS.index(layer) + 1]) | {"errors"}
    wrong = [m for m in _engine_imports(path) if _layer(m) not in allowed]
    assert not wrong, f"{name} ({layer}) imports {wrong} from a layer above it"


def test_no_import_cycle():
    graph = {name: {m for m in _engine_imports(path) if m != name} for name, path in _modules()}
    state = {}

    def visit(node, trail):
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", f"import cycle: {' -> '.join(trail + [node])}"
        state[node] = "open"
        for nxt in graph.get(node, ()):
            visit(nxt, trail + [node])
        state[node] = "done"

    for node in graph:
        visit(node, [])


# The rooms of spark/, lower first: the catalog (the metastore side of a table), the shared
# modules (spark/*.py: the table handle, locking, a write's job, session settings, reading
# some files), the write path, the services. A room imports its own and those before it:
# the write path does not import the services (a write's inline services are called from
# services/inline.py, above it).
SPARK_ROOMS = ["catalog", "shared", "write", "services"]


def _spark_room(module):
    parts = module.split(".")
    if parts[:2] != ["python_adapter", "spark"] or len(parts) < 3:
        return None
    return parts[2] if len(parts) > 3 or parts[2] in SPARK_ROOMS else "shared"


@pytest.mark.parametrize("name, path", [m for m in _modules() if _spark_room(m[0])])
def test_spark_rooms_import_down(name, path):
    room = _spark_room(name)
    allowed = set(SPARK_ROOMS[: SPARK_ROOMS.index(room) + 1])
    wrong = [m for m in _engine_imports(path)
             if _spark_room(m) is not None and _spark_room(m) not in allowed]
    assert not wrong, f"{name} ({room}) imports {wrong} from a room above it"


@pytest.mark.parametrize("name, path", list(_modules()))
def test_no_private_name_of_another_module(name, path):
    private = [f"{m}.{n}" for m, names in _imports(path) if m.startswith("python_adapter")
               for n in names if n.startswith("_")]
    assert not private, f"{name} imports {private}"


@pytest.mark.parametrize("name, path", list(_modules()))
def test_parameter_lists_are_short(name, path):
    long = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs
                      if a.arg not in ("self", "cls")]
            if len(params) > MAX_PARAMETERS:
                long.append(f"{node.name} ({len(params)})")
    assert not long, f"{name}: more than {MAX_PARAMETERS} parameters: {long} (pass a record)"


def test_the_dbt_plugin_calls_the_engine_through_api_and_errors_only():
    used = set()
    for path in (ROOT / "dbt").rglob("*.py"):
        used |= {m for m, names in _imports(path) if m.startswith("python_adapter.")}
        used |= {f"python_adapter.{n}" for m, names in _imports(path) if m == "python_adapter"
                 for n in names}
    assert used <= {"python_adapter.api", "python_adapter.errors"}, used


def _without_hints(tree):
    """'name(params)' of each public function or method (name without a leading '_', or
    __init__; properties too; not those defined inside a function or a private class) that
    leaves a parameter (self and cls aside) or its return without a type hint."""
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and child.name.startswith("_"):
                continue
            is_function = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if is_function and not in_function and (
                    child.name == "__init__" or not child.name.startswith("_")):
                args = child.args
                params = args.posonlyargs + args.args + args.kwonlyargs + \
                    [a for a in (args.vararg, args.kwarg) if a is not None]
                bare = [a.arg for a in params
                        if a.annotation is None and a.arg not in ("self", "cls")]
                if child.returns is None:
                    bare.append("return")
                if bare:
                    found.append(f"{child.name}({', '.join(bare)})")
            visit(child, in_function or is_function)

    visit(tree, False)
    return found


@pytest.mark.parametrize("name, path", list(_modules()))
def test_public_functions_have_type_hints(name, path):
    missing = _without_hints(ast.parse(path.read_text()))
    assert not missing, f"{name}: public functions without type hints: {missing}"


# the one module that asks which kind of session it holds: it makes the session's backend
ASKS_THE_KIND_OF_SESSION = "python_adapter.io.backend"


@pytest.mark.parametrize("name, path", [m for m in _modules()
                                        if not m[0].startswith("python_adapter.io.connect_")])
def test_only_the_backend_asks_which_kind_of_session_it_holds(name, path):
    """`method: session` or `connect` is asked once per session, by io/backend.py
    (docs/design.md, "Spark Connect"): every other module calls the backend's interfaces
    and runs the same code on both (the Connect implementations are Connect's own)."""
    asks = [m for m, names in _imports(path) if "is_connect" in names]
    assert not asks or name == ASKS_THE_KIND_OF_SESSION, f"{name} imports is_connect"
