"""Reading and writing: TREC run and qrels files, trec_eval's output layout, Parquet streaming, other tools'
dataset files (``io.datasets``) and annotations for tracing tools (``io.annotations``)."""
