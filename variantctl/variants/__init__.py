"""Launch variants, pure: inheritance with origins, rendering, diff and pre-flight rules.

Nothing here touches the filesystem or runs a process; ``variantctl.config.variants``
reads the YAML and builds the layers these functions work on.
"""
