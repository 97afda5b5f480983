"""The HTML report of a table: file size histograms per partition, small files over time,
clustering state.

In layers: report.data (the numbers, from a Layout and the timeline's instants),
report.charts (SVG), report.text (escaping) and report.page (`render_report`, the page) are
pure; report.read (`write_report`) is the one module that reads a table.
"""
from python_adapter.report.page import render_report
from python_adapter.report.read import write_report

__all__ = ["render_report", "write_report"]
