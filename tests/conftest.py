"""Options of the whole suite."""
import pathlib


def pytest_addoption(parser):
    parser.addoption(
        "--first-variant-under", action="append", default=[], metavar="DIR",
        help="of each parametrized test under DIR, run only its first variant (scripts/"
             "test.sh on pyspark 3.5, for tests/functional: there the variants vary the data, "
             "the plan or the strategy over Spark calls the first one or another module "
             "makes; pyspark 4's run keeps them all)")


def pytest_collection_modifyitems(config, items):
    under = [pathlib.Path(d).resolve() for d in config.getoption("--first-variant-under")]
    if not under:
        return
    seen, kept, dropped = set(), [], []
    for item in items:
        function = item.nodeid.split("[", 1)[0]
        narrowed = (getattr(item, "callspec", None) is not None
                    and item.get_closest_marker("every_variant") is None
                    and any(pathlib.Path(item.path).resolve().is_relative_to(d) for d in under))
        if narrowed and function in seen:
            dropped.append(item)
            continue
        seen.add(function)
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
