"""EFFECTFUL: executors. One small interface, a local and an SSH implementation."""
