"""Getting datasets in and out: an import writes documents, summaries, scores and the imported labels (parsed
by corpus.importers), uploads are imported by a worker (ingest.jobs), and a dataset is written back out as the
JSONL it can be imported from. No models of its own: it writes corpus and studies rows."""
