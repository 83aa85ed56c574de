"""What the tests and the benchmarks both start: the OpenAI-compatible test server with slots and
queueing as llama.cpp and vLLM have them (``llm_server.py``, ``slots.py``), a throwaway
PostgreSQL server (``postgres.py``), ``split-assets run`` processes (``runs.py``) and Ctrl-C at
seeded moments (``sigint.py``). Not part of the package: the tests reach it through pytest's
``pythonpath``, the benchmarks run as ``python -m bench.NAME`` from the checkout."""
