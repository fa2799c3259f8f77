"""``variantctl bench``: an async streaming OpenAI-compatible load generator.

The metrics are defined exactly as ``vllm bench serve`` defines them (see
``metrics.py``), plus the seed studies' own (per-request output TPS, the
steady-state window, the TPOT increase over concurrency 1).

Layout: ``params`` (validated, frozen parameters) → ``prompts`` (what to send)
→ ``client`` (one streaming request → one ``RequestResult``) → ``runner`` (a
level: warm-up, concurrency limit, arrival process) → ``metrics`` (pure) →
``model`` (frozen results, JSON schema ``variantctl.bench/1``) → ``export``
(``vllm bench serve``'s result JSON).
"""
