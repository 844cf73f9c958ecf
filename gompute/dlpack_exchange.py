"""DLPack's C exchange table: the name of the capsule a framework's array type carries it in
(`type(x).__dlpack_c_exchange_api__`, PyTorch among them). gompute reads the table in C++ only
(csrc/dlpack_exchange.h, csrc/array_view.cpp); Python asks it through
`_core.current_work_stream`.
"""

CAPSULE_NAME = b"dlpack_exchange_api"
