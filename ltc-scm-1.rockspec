package = "ltc"
version = "scm-1"
source = {
  url = "git+file://.", -- built from a checkout: luarocks --lua-version=5.4 make
}
description = {
  summary = "A lazy tensor runtime: traced IR, cached compiled graphs, a CPU backend",
  detailed = [[
    Every tensor op is recorded as an IR node; at a sync the pending graph is hashed,
    compiled once (LRU compile cache) and run on a CPU backend (OpenBLAS GEMM).
  ]],
  license = "MIT",
}
dependencies = {
  "lua >= 5.4",
}
external_dependencies = {
  -- OpenBLAS's header lives in a multiarch folder luarocks does not search: declare the
  -- library only; the Makefile finds the header.
  OPENBLAS = { library = "openblas" },
  YAML = { header = "yaml.h" },
  XXHASH = { header = "xxhash.h" },
  ZLIB = { header = "zlib.h" },
}
build = {
  type = "make",
  build_variables = {
    CFLAGS = "$(CFLAGS)",
    LUA_INC = "$(LUA_INCDIR)",
  },
  install_variables = {
    INST_LIBDIR = "$(LIBDIR)",
    INST_LUADIR = "$(LUADIR)",
    -- the public headers stay in the rock's folder; ltc.pc goes beside the module folder
    -- (<tree>/lib/lua/5.4/pkgconfig) and finds core.so relative to itself
    INST_INCDIR = "$(PREFIX)/include",
    INST_PCDIR = "$(LIBDIR)/pkgconfig",
    PC_MODDIR_REL = "../ltc",
  },
}
