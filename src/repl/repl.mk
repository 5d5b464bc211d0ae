# ---- tab completion for the REPL: build/ltc/repl_readline.so ----------------------------------
# lua5.4's REPL (bin/ltc with no arguments) reads lines with GNU readline; this small module sets
# readline's completion hook to lua/ltc/repl.lua's completer. Built where readline's headers are
# (libreadline-dev); elsewhere `make` says it skips it and the REPL has no tab completion.

DEBIAN_PKGS += libreadline-dev

HAVE_READLINE := $(shell test -f /usr/include/readline/readline.h && echo yes)
ifeq ($(HAVE_READLINE),yes)
all: $(BUILD)/ltc/repl_readline.so

$(BUILD)/ltc/repl_readline.so: src/repl/ltc_repl.c
	@mkdir -p $(BUILD)/ltc
	$(CC) -I$(LUA_INC) -std=c11 -fPIC -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -O2 -g \
	  $(LDFLAGS) -shared -o $@ src/repl/ltc_repl.c -lreadline
else
all: repl-skip
endif

.PHONY: repl-skip install-repl
repl-skip:
	@echo "ltc.repl_readline: skipped (no readline headers: sudo apt-get install libreadline-dev);"
	@echo "                   the REPL works without tab completion"

install: install-repl
install-repl: all
	@if [ -f $(BUILD)/ltc/repl_readline.so ]; then \
	  install -D -m 755 $(BUILD)/ltc/repl_readline.so $(DESTDIR)$(INST_LIBDIR)/ltc/repl_readline.so; fi
