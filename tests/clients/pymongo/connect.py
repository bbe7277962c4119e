"""pymongo connects and pings: plain, and with each compressor."""
import os

import pymongo
from pymongo.errors import OperationFailure

uri = os.environ["MAYFLY_URI"]

for compressors in (None, "zstd", "snappy", "zlib"):
    kwargs = {"serverSelectionTimeoutMS": 5000}
    if compressors:
        kwargs["compressors"] = compressors
    client = pymongo.MongoClient(uri, **kwargs)
    try:
        assert client.admin.command("ping")["ok"] == 1.0
        assert client.server_info()["version"] == "7.0.0"
        try:
            client.test.command("nope")
            raise AssertionError("unknown command did not fail")
        except OperationFailure as e:
            assert e.code == 59, e
        if compressors:
            # The server counts bytes through each compressor it decompressed requests with.
            status = client.admin.command("serverStatus")
            decompressed = status["network"]["compression"][compressors]["decompressor"]["bytesIn"]
            assert decompressed > 0, f"{compressors}: no request arrived compressed"
    finally:
        client.close()
print("ok")
