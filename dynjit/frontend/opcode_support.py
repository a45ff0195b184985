"""Why the translator does not trace an opcode (each one is a graph break, never a crash).

Every opcode of 3.11, 3.12 and 3.13 is either handled by a method of
InstructionTranslator or listed here by category, with the reason shown to
users when tracing stops on it.
"""

EXCEPTION_HANDLING = {"PUSH_EXC_INFO", "CHECK_EXC_MATCH", "CHECK_EG_MATCH", "WITH_EXCEPT_START",
                      "POP_EXCEPT", "RERAISE", "PREP_RERAISE_STAR", "CLEANUP_THROW"}
ASYNC_AND_YIELD_FROM = {"GET_AITER", "GET_ANEXT", "BEFORE_ASYNC_WITH", "END_ASYNC_FOR", "SEND",
                        "END_SEND", "GET_AWAITABLE", "ASYNC_GEN_WRAP", "GET_YIELD_FROM_ITER"}
PATTERN_MATCHING = {"MATCH_MAPPING", "MATCH_SEQUENCE", "MATCH_KEYS", "MATCH_CLASS", "GET_LEN"}
CLASS_AND_MODULE_BODIES = {"LOAD_BUILD_CLASS", "SETUP_ANNOTATIONS", "LOAD_LOCALS", "LOAD_CLASSDEREF",
                           "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_FROM_DICT_OR_DEREF", "STORE_NAME",
                           "DELETE_NAME", "IMPORT_STAR", "PRINT_EXPR"}
COMPILER_PSEUDO = {"SETUP_FINALLY", "SETUP_CLEANUP", "SETUP_WITH", "POP_BLOCK", "LOAD_SUPER_METHOD",
                   "LOAD_ZERO_SUPER_METHOD", "LOAD_ZERO_SUPER_ATTR", "STORE_FAST_MAYBE_NULL"}
INTERPRETER_INTERNAL = {"INTERPRETER_EXIT", "RESERVED", "ENTER_EXECUTOR", "EXIT_INIT_CHECK",
                        "CALL_INTRINSIC_2"}
GLOBAL_DELETION = {"DELETE_GLOBAL"}


def unsupported_reason(opname):
    """The user-facing reason tracing stops at `opname`, or None if it is not classified."""
    if opname.startswith("INSTRUMENTED_"):
        return f"{opname}: an instrumented opcode (sys.monitoring is active)"
    if opname in EXCEPTION_HANDLING:
        return f"{opname}: exception handling (only runs when an exception is raised)"
    if opname in ASYNC_AND_YIELD_FROM:
        return f"{opname}: coroutines, async iteration and `yield from` are not traced"
    if opname in PATTERN_MATCHING:
        return f"{opname}: the `match` statement is not traced"
    if opname in CLASS_AND_MODULE_BODIES:
        return f"{opname}: class bodies and module-level code are not traced (a class statement " \
               "inside a compiled function)"
    if opname in COMPILER_PSEUDO:
        return f"{opname}: a compiler pseudo-instruction (never in final bytecode)"
    if opname in INTERPRETER_INTERNAL:
        return f"{opname}: interpreter-internal opcode"
    if opname in GLOBAL_DELETION:
        return f"{opname}: deleting a global inside a compiled function"
    return None
