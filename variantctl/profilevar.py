"""The environment variable that turns the profile points on (one definition).

The ``instrument`` patch operation writes code that reads it, ``bench --profile`` and
``profile: true`` sweeps set it in the server's environment, and a configuration's key
leaves it out (the directory a run records into is not part of what is measured).
"""

PROFILE_ENV = "VARIANTCTL_PROFILE"
