"""The split card (``split-assets report``): a frozen split's statistics, its judge and its
ledger as a self-contained HTML page and a Markdown file with figures, for others to read.
It carries ids and statistics only, never the benchmark's question text."""
