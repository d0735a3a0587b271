# SPDX-License-Identifier: Apache-2.0
"""numpy dtypes of the runtime's buffer data types (QAicBufferDataTypeEnum)."""
import numpy as np

import qaicrt

_NUMPY = {
    qaicrt.BUFFER_DATA_TYPE_FLOAT: np.dtype(np.float32),
    qaicrt.BUFFER_DATA_TYPE_FLOAT16: np.dtype(np.float16),
    qaicrt.BUFFER_DATA_TYPE_INT8Q: np.dtype(np.int8),
    qaicrt.BUFFER_DATA_TYPE_UINT8Q: np.dtype(np.uint8),
    qaicrt.BUFFER_DATA_TYPE_INT16Q: np.dtype(np.int16),
    qaicrt.BUFFER_DATA_TYPE_INT32Q: np.dtype(np.int32),
    qaicrt.BUFFER_DATA_TYPE_INT32I: np.dtype(np.int32),
    qaicrt.BUFFER_DATA_TYPE_INT64I: np.dtype(np.int64),
    qaicrt.BUFFER_DATA_TYPE_INT8: np.dtype(np.int8),
    qaicrt.BUFFER_DATA_TYPE_UINT8: np.dtype(np.uint8),
    qaicrt.BUFFER_DATA_TYPE_FLOAT64C: np.dtype(np.complex64),
}


def numpy_dtype(data_type):
    """The numpy dtype of a QAicBufferDataTypeEnum; ValueError for BUFFER_DATA_TYPE_INVAL."""
    try:
        return _NUMPY[data_type]
    except KeyError:
        raise ValueError(f"no numpy dtype for {data_type!r}") from None
