"""Reading and writing: TREC run and qrels files, trec_eval's output layout, Parquet streaming."""
