"""What the benchmark scripts share, one copy each:

  session  the private SparkSession of a run (local[2] or a standalone cluster, loopback,
           warehouse and Derby metastore in the run's work directory) and conf_set
  data     the generated rows: backfill.py's events over daily partitions, the names of the
           tables and views they are read from, upsert.py's batches (options, plan, rows)
  tables   the tables of a run: the source table and view every method reads, the batches
           table, dbt-spark's plain Parquet table and INSERT OVERWRITE, ours' configs, a
           table's data files (location, listing, copy) and what a write changed in them
  report   a run from its work directory to its report: text and markdown tables, the
           markdown header, the engine's commit, finishing the run (the .md, --keep)
  plots    the figures: file sizes per method (backfill.py), files over batches (upsert.py)

session, data, report and plots import pyspark and matplotlib only inside the functions
that use them; tables imports the engine (python_adapter.api).
"""
import os

BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(BENCHMARKS)
DEFAULT_OUT = os.path.join(BENCHMARKS, "out")
