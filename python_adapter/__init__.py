"""The sized-write engine, importable without dbt.

Pure planning lives in modules that take plain data (sizes, config, planning, binpack,
routing); Spark and filesystem I/O sit in thin modules around them (fs, measure,
distribution, layout, writer).
"""
