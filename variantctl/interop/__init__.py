"""Results that travel: stored runs exported as tables (``runs export``) and other
tools' result files imported as runs (``runs import``)."""
