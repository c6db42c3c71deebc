"""The documentation site: pages from the spec, the properties and the reports.

Modules:

* :mod:`.pages`: the generated pages (claims, topics, families, implementations, the
  overview) as a mapping from site-relative paths to Markdown, and the navigation;
* :mod:`.matrix` and :mod:`.tables`: the results matrix of a claim page and the small
  tables, badges and escaping helpers the pages are made of;
* :mod:`.runs`: reading, checking and merging reports;
* :mod:`.spectext`: spec and docstring text as the pages write it (``</w>`` shown, not
  taken as a tag; documents cited by number named by title);
* :mod:`.plots`: the figures, one module per family;
* :mod:`.hooks`: the MkDocs hooks every build uses (the checkout's ``mkdocs build`` and
  ``specformer site`` alike);
* :mod:`.command`: ``specformer site --report R -o DIR``.

Importing this package imports nothing else; the site never runs the suite.
"""
