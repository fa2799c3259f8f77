"""Code that runs inside *other* processes (vLLM's), never in variantctl's own.

Its source text is inlined into the files a patch writes (see
:mod:`variantctl.patching.instrument`), so every module here is self-contained:
standard library only, no variantctl import. It lives outside ``patching/``
because it does I/O (it writes the profile files) and ``patching/`` is pure.
"""
