"""The report: what a run found, as JSON, JUnit XML and a printed summary.

* :mod:`specformer.report.model`: the JSON report (schema, one entry per row and per
  implementation), written atomically as rows arrive;
* :mod:`specformer.report.summary`: the summary a person reads at the end of a run,
  identical failures grouped, tensors shown as shape, dtype and a few values;
* :mod:`specformer.report.junit`: one JUnit testcase per row, for CI;
* :mod:`specformer.report.deviations`: known deviations of implementations, which turn
  an expected failure into ``known-deviation`` and a stale entry into ``fixed``.
* :mod:`specformer.report.diff`: two reports compared row by row (``specformer diff``),
  written as text by :mod:`specformer.report.diff_text`.
* :mod:`specformer.report.reading`: a report file read as data, bounded in size and
  nesting, by every command that reads one (``diff``, ``replay``, ``merge``, ``site``,
  ``run --failed``).

The row outcomes themselves are defined where rows are run
(:mod:`specformer.runner.row`). Nothing here runs a property or an implementation.
"""
