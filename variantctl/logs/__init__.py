"""PURE startup-log classification: normaliser, signature catalog model, matcher, phase
tracker, facts extractor, streaming state and expectation checks. No file or process access:
callers pass text, lines and a clock; the catalog YAML is read by ``variantctl.config``.

Entry points: :func:`variantctl.config.catalog.default_catalog`,
:func:`variantctl.logs.classify.classify_text`,
:class:`variantctl.logs.stream.StreamClassifier`, :func:`variantctl.logs.expect.compare`.
"""
