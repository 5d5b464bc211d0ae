/*
 * ltc_repl.c - tab completion for lua5.4's own REPL (bin/ltc with no arguments): the module
 * ltc.repl_readline installs a GNU readline completion function that asks a Lua function for
 * the candidates. Debian's lua5.4 reads its lines with readline (the interpreter links
 * libreadline.so.8), so a module loaded into it that sets readline's completion hooks extends
 * that REPL; nothing else changes (history, prompts, printing of results stay lua5.4's).
 *
 * Lua: require("ltc.repl_readline").install(fn): fn(word) returns a list of strings, the
 * completions of word (the text before the cursor back to a space or an operator; `ltc.so`,
 * `x:sof`). Errors in fn complete nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <readline/readline.h>

static lua_State *repl_L; /* the main thread of the state that installed the hook */
static int complete_ref = LUA_NOREF;
static char **found;      /* the candidates of the current completion (strdup'ed) */
static int n_found, next_found;

static void found_clear(void) {
    for (int i = next_found; i < n_found; i++) free(found[i]);
    free(found);
    found = NULL;
    n_found = next_found = 0;
}

/* Calls the Lua function for `text`; keeps the stack as it was (readline is called by lua.c
 * in the middle of its REPL, with the prompt on the stack). */
static void found_fill(const char *text) {
    found_clear();
    lua_State *L = repl_L;
    if (!L || complete_ref == LUA_NOREF) return;
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, complete_ref);
    lua_pushstring(L, text);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
        int n = (int)luaL_len(L, -1);
        found = calloc((size_t)n + 1, sizeof *found);
        for (int i = 1; found && i <= n; i++) {
            lua_rawgeti(L, -1, i);
            const char *s = lua_tostring(L, -1);
            if (s && (found[n_found] = strdup(s))) n_found++;
            lua_pop(L, 1);
        }
    }
    lua_settop(L, top);
}

/* readline's generator: the candidates one by one (readline frees them). */
static char *generator(const char *text, int state) {
    if (state == 0) found_fill(text);
    if (next_found < n_found) return found[next_found++];
    found_clear();
    return NULL;
}

static char **attempt(const char *text, int start, int end) {
    (void)start, (void)end;
    rl_attempted_completion_over = 1; /* no file names when Lua has nothing */
    rl_completion_append_character = '\0';
    return rl_completion_matches(text, generator);
}

/* Words end at spaces, quotes and operators, not at '.' or ':' (so `ltc.so` is one word). */
static char word_breaks[] = " \t\n\"\\'`@$><=;|&{(,+-*/%^#~[]";

static int l_install(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_pushvalue(L, 1);
    if (complete_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, complete_ref);
    complete_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    repl_L = lua_tothread(L, -1);
    lua_pop(L, 1);
    rl_attempted_completion_function = attempt;
    rl_completer_word_break_characters = word_breaks;
    lua_pushboolean(L, 1);
    return 1;
}

int luaopen_ltc_repl_readline(lua_State *L) {
    static const luaL_Reg fns[] = {{"install", l_install}, {NULL, NULL}};
    luaL_newlib(L, fns);
    lua_pushstring(L, rl_library_version ? rl_library_version : "");
    lua_setfield(L, -2, "readline_version");
    return 1;
}
