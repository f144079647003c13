"""Write the small table and array files the data tests read (tests/data, tests/bad).

Run from the repository root with pandas, pyarrow and numpy installed:
    python tests/data/make_table_fixtures.py
The files are committed; run this again only to change them.
"""
import numpy as np
import pandas as pd

# A table as pandas writes it: floats, ints and a bool column; Parquet with Snappy (pandas'
# default), Zstandard, and Feather with LZ4 (pandas' default).
t = pd.DataFrame(
    {
        "x1": [0.5, -1.25, 2.0, 3.5],
        "x2": [1.0, 0.0, -2.5, 4.0],
        "y": np.array([1, 0, 1, 1], dtype=np.int64),
        "flag": [True, False, True, False],
    }
)
t.to_parquet("tests/data/table.parquet")
t.to_parquet("tests/data/table_zstd.parquet", compression="zstd")
t.to_feather("tests/data/table.feather")
np.save("tests/data/X.npy", t[["x1", "x2"]].to_numpy())
np.save("tests/data/X_fortran.npy", np.asfortranarray(t[["x1", "x2"]].to_numpy()))
np.save("tests/data/y.npy", t["y"].to_numpy().astype(np.int32))

# Bad files, one mistake each (tests/bad/*.mvi names them in their .args files).
with open("tests/bad/data_parquet_corrupt.parquet", "wb") as f:
    f.write(b"PAR1 this is not really a parquet file PAR1")
pd.DataFrame({"x1": [0.5, None, 2.0], "y": [1, 0, 1]}).to_parquet("tests/bad/data_parquet_nulls.parquet")
pd.DataFrame({"x1": [0.5, 1.0], "y": ["yes", "no"]}).to_parquet("tests/bad/data_parquet_strings.parquet")
np.save("tests/bad/data_npy_complex.X.npy", np.ones((2, 2), dtype=complex))
np.save("tests/bad/data_npy_strings.y.npy", np.array(["a", "b"]))
np.save("tests/bad/data_npy_three_dims.X.npy", np.zeros((2, 2, 2)))
np.save("tests/bad/data_npy_wrong_shape.X.npy", np.arange(3.0))
