"""variantctl: patch, launch and diagnose vLLM server variants."""

__version__ = "0.1.0"
