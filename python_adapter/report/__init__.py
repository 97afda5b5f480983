"""The HTML report of a table: file size histograms per partition, small files over time,
clustering state. Pure rendering, apart from `write_report`, which reads the table."""
from python_adapter.report.html import write_report  # noqa: F401
