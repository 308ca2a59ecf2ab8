// Handle-based C adapter over libclang's C API, used by codegen/clang/mod.ts.
//
// libclang passes CXCursor (32 bytes), CXType (24 bytes) and CXString by
// value. bun:ffi cannot pass or return structs by value, so every runtime goes
// through this file instead: cursors and types live in tables here and cross
// the FFI boundary as int32 handles; strings come back as `const char *` that
// stay valid until the next string-returning call. libclang itself is opened
// with dlopen, so this file needs no libclang headers or import library.
//
// It is compiled on demand by codegen/clang/build.ts (pinned zig) into
// .zig-cache/, never shipped, and only ever runs on the machine that
// generates the bindings.

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#define WCG_API __declspec(dllexport)
#else
#define WCG_API __attribute__((visibility("default")))
#endif

// The stable libclang ABI (clang-c/Index.h, CXString.h), restated.
typedef struct { int kind; int xdata; const void *data[3]; } CXCursor;
typedef struct { int kind; void *data[2]; } CXType;
typedef struct { const void *data; unsigned private_flags; } CXString;
typedef struct { const void *ptr_data[2]; unsigned int_data; } CXSourceLocation;
typedef struct { const void *ptr_data[2]; unsigned begin_int_data, end_int_data; } CXSourceRange;
typedef struct { unsigned int_data[4]; void *ptr_data; } CXToken;
typedef struct { const char *Filename; const char *Contents; unsigned long Length; } CXUnsavedFile;
typedef void *CXIndex;
typedef void *CXTranslationUnit;
typedef void *CXFile;
typedef void *CXDiagnostic;
typedef int (*CXCursorVisitor)(CXCursor, CXCursor, void *);

#define CLANG_FUNCTIONS(X) \
  X(CXIndex, clang_createIndex, (int, int)) \
  X(void, clang_disposeIndex, (CXIndex)) \
  X(int, clang_parseTranslationUnit2, (CXIndex, const char *, const char *const *, int, CXUnsavedFile *, unsigned, unsigned, CXTranslationUnit *)) \
  X(void, clang_disposeTranslationUnit, (CXTranslationUnit)) \
  X(unsigned, clang_getNumDiagnostics, (CXTranslationUnit)) \
  X(CXDiagnostic, clang_getDiagnostic, (CXTranslationUnit, unsigned)) \
  X(int, clang_getDiagnosticSeverity, (CXDiagnostic)) \
  X(CXString, clang_formatDiagnostic, (CXDiagnostic, unsigned)) \
  X(void, clang_disposeDiagnostic, (CXDiagnostic)) \
  X(CXCursor, clang_getTranslationUnitCursor, (CXTranslationUnit)) \
  X(unsigned, clang_visitChildren, (CXCursor, CXCursorVisitor, void *)) \
  X(CXString, clang_getCursorSpelling, (CXCursor)) \
  X(CXSourceLocation, clang_getCursorLocation, (CXCursor)) \
  X(void, clang_getSpellingLocation, (CXSourceLocation, CXFile *, unsigned *, unsigned *, unsigned *)) \
  X(CXString, clang_getFileName, (CXFile)) \
  X(CXSourceRange, clang_getCursorExtent, (CXCursor)) \
  X(void, clang_tokenize, (CXTranslationUnit, CXSourceRange, CXToken **, unsigned *)) \
  X(CXString, clang_getTokenSpelling, (CXTranslationUnit, CXToken)) \
  X(void, clang_disposeTokens, (CXTranslationUnit, CXToken *, unsigned)) \
  X(CXType, clang_getCursorType, (CXCursor)) \
  X(CXType, clang_getTypedefDeclUnderlyingType, (CXCursor)) \
  X(CXType, clang_getEnumDeclIntegerType, (CXCursor)) \
  X(long long, clang_getEnumConstantDeclValue, (CXCursor)) \
  X(int, clang_Cursor_getNumArguments, (CXCursor)) \
  X(CXCursor, clang_Cursor_getArgument, (CXCursor, unsigned)) \
  X(long long, clang_Cursor_getOffsetOfField, (CXCursor)) \
  X(unsigned, clang_isCursorDefinition, (CXCursor)) \
  X(unsigned, clang_Cursor_isAnonymous, (CXCursor)) \
  X(unsigned, clang_Cursor_isBitField, (CXCursor)) \
  X(unsigned, clang_Cursor_isMacroFunctionLike, (CXCursor)) \
  X(CXString, clang_Cursor_getRawCommentText, (CXCursor)) \
  X(CXString, clang_Cursor_getBriefCommentText, (CXCursor)) \
  X(CXString, clang_getTypeSpelling, (CXType)) \
  X(CXType, clang_getCanonicalType, (CXType)) \
  X(CXType, clang_getPointeeType, (CXType)) \
  X(CXType, clang_getResultType, (CXType)) \
  X(int, clang_getNumArgTypes, (CXType)) \
  X(CXType, clang_getArgType, (CXType, unsigned)) \
  X(unsigned, clang_isFunctionTypeVariadic, (CXType)) \
  X(unsigned, clang_isConstQualifiedType, (CXType)) \
  X(long long, clang_Type_getSizeOf, (CXType)) \
  X(long long, clang_Type_getAlignOf, (CXType)) \
  X(long long, clang_getArraySize, (CXType)) \
  X(CXType, clang_getArrayElementType, (CXType)) \
  X(CXType, clang_Type_getNamedType, (CXType)) \
  X(CXCursor, clang_getTypeDeclaration, (CXType)) \
  X(const char *, clang_getCString, (CXString)) \
  X(void, clang_disposeString, (CXString))

#define DECLARE(ret, name, args) static ret(*p_##name) args;
CLANG_FUNCTIONS(DECLARE)
#undef DECLARE

static void *lib;
static CXIndex index_;
static CXTranslationUnit tu;
static CXCursor *cursors;
static int32_t n_cursors, cap_cursors;
static CXType *types;
static int32_t n_types, cap_types;
static char *text;   // last returned string, owned here
static int32_t last_first, last_count;

static void *grow(void *p, int32_t *cap, size_t elem) {
  *cap = *cap ? *cap * 2 : 4096;
  void *q = realloc(p, (size_t)*cap * elem);
  if (!q) abort();
  return q;
}

static int32_t put_cursor(CXCursor c) {
  if (n_cursors == cap_cursors) cursors = grow(cursors, &cap_cursors, sizeof(CXCursor));
  cursors[n_cursors] = c;
  return n_cursors++;
}

static int32_t put_type(CXType t) {
  if (n_types == cap_types) types = grow(types, &cap_types, sizeof(CXType));
  types[n_types] = t;
  return n_types++;
}

static const char *keep(char *s) {
  free(text);
  text = s;
  return s;
}

static const char *take(CXString s) {
  const char *c = p_clang_getCString(s);
  char *copy = c ? strdup(c) : NULL;
  p_clang_disposeString(s);
  return keep(copy);
}

/** Opens libclang at `path`; returns NULL on success, else a message. */
WCG_API const char *wcg_open(const char *path) {
  if (lib) return NULL;
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return dlerror();
#define RESOLVE(ret, name, args) \
  if (!(p_##name = (ret(*) args)dlsym(lib, #name))) return "libclang lacks " #name;
  CLANG_FUNCTIONS(RESOLVE)
#undef RESOLVE
  index_ = p_clang_createIndex(0, 0);
  return NULL;
}

/**
 * Parses `contents` as the file `name` with the arguments in `args` (one per
 * line). Returns the libclang error code (0 = success). Resets all handles;
 * the translation unit cursor is handle 0.
 */
WCG_API int32_t wcg_parse(const char *name, const char *contents, const char *args) {
  if (tu) p_clang_disposeTranslationUnit(tu);
  tu = NULL;
  n_cursors = n_types = 0;
  char *buf = strdup(args);
  const char *argv[256];
  int argc = 0;
  for (char *p = buf, *line; argc < 256 && (line = strsep(&p, "\n"));)
    if (*line) argv[argc++] = line;
  CXUnsavedFile file = {name, contents, (unsigned long)strlen(contents)};
  // DetailedPreprocessingRecord (macros) | SkipFunctionBodies
  int rc = p_clang_parseTranslationUnit2(index_, name, argv, argc, &file, 1, 0x01 | 0x40, &tu);
  free(buf);
  if (rc == 0) put_cursor(p_clang_getTranslationUnitCursor(tu));
  return rc;
}

WCG_API int32_t wcg_num_diagnostics(void) { return (int32_t)p_clang_getNumDiagnostics(tu); }

/** Severity of diagnostic `i` (0 ignored .. 4 fatal). */
WCG_API int32_t wcg_diagnostic_severity(int32_t i) {
  CXDiagnostic d = p_clang_getDiagnostic(tu, (unsigned)i);
  int s = p_clang_getDiagnosticSeverity(d);
  p_clang_disposeDiagnostic(d);
  return s;
}

/** Diagnostic `i` formatted with location and category. */
WCG_API const char *wcg_diagnostic(int32_t i) {
  CXDiagnostic d = p_clang_getDiagnostic(tu, (unsigned)i);
  const char *s = take(p_clang_formatDiagnostic(d, 0x1 | 0x2));
  p_clang_disposeDiagnostic(d);
  return s;
}

static int visit(CXCursor c, CXCursor parent, void *data) {
  (void)parent;
  (void)data;
  put_cursor(c);
  last_count++;
  return 1;  // CXChildVisit_Continue
}

/** Appends the children of cursor `c` to the table; returns their count. */
WCG_API int32_t wcg_children(int32_t c) {
  CXCursor parent = cursors[c];
  last_first = n_cursors;
  last_count = 0;
  p_clang_visitChildren(parent, visit, NULL);
  return last_count;
}

/** Handle of the first child appended by the last wcg_children call. */
WCG_API int32_t wcg_children_first(void) { return last_first; }

WCG_API int32_t wcg_cursor_kind(int32_t c) { return cursors[c].kind; }
WCG_API const char *wcg_cursor_spelling(int32_t c) { return take(p_clang_getCursorSpelling(cursors[c])); }

/** File of the cursor's spelling location (NULL for built-ins). */
WCG_API const char *wcg_cursor_file(int32_t c) {
  CXFile f = NULL;
  p_clang_getSpellingLocation(p_clang_getCursorLocation(cursors[c]), &f, NULL, NULL, NULL);
  return f ? take(p_clang_getFileName(f)) : keep(NULL);
}

WCG_API int32_t wcg_cursor_line(int32_t c) {
  unsigned line = 0;
  p_clang_getSpellingLocation(p_clang_getCursorLocation(cursors[c]), NULL, &line, NULL, NULL);
  return (int32_t)line;
}

/** The cursor's tokens as written (macros unexpanded), joined by U+001F. */
WCG_API const char *wcg_cursor_tokens(int32_t c) {
  CXToken *toks = NULL;
  unsigned n = 0;
  p_clang_tokenize(tu, p_clang_getCursorExtent(cursors[c]), &toks, &n);
  size_t len = 0, cap = 256;
  char *out = malloc(cap);
  out[0] = 0;
  for (unsigned i = 0; i < n; i++) {
    CXString s = p_clang_getTokenSpelling(tu, toks[i]);
    const char *t = p_clang_getCString(s);
    size_t tl = strlen(t);
    while (len + tl + 2 > cap) out = realloc(out, cap *= 2);
    if (i) out[len++] = '\x1f';
    memcpy(out + len, t, tl + 1);
    len += tl;
    p_clang_disposeString(s);
  }
  if (toks) p_clang_disposeTokens(tu, toks, n);
  return keep(out);
}

WCG_API int32_t wcg_cursor_type(int32_t c) { return put_type(p_clang_getCursorType(cursors[c])); }
WCG_API int32_t wcg_typedef_underlying(int32_t c) { return put_type(p_clang_getTypedefDeclUnderlyingType(cursors[c])); }
WCG_API int32_t wcg_enum_integer_type(int32_t c) { return put_type(p_clang_getEnumDeclIntegerType(cursors[c])); }
WCG_API int64_t wcg_enum_value(int32_t c) { return p_clang_getEnumConstantDeclValue(cursors[c]); }
WCG_API int32_t wcg_num_arguments(int32_t c) { return p_clang_Cursor_getNumArguments(cursors[c]); }
WCG_API int32_t wcg_argument(int32_t c, int32_t i) { return put_cursor(p_clang_Cursor_getArgument(cursors[c], (unsigned)i)); }
WCG_API int64_t wcg_field_offset_bits(int32_t c) { return p_clang_Cursor_getOffsetOfField(cursors[c]); }
WCG_API int32_t wcg_is_definition(int32_t c) { return (int32_t)p_clang_isCursorDefinition(cursors[c]); }
WCG_API int32_t wcg_is_anonymous(int32_t c) { return (int32_t)p_clang_Cursor_isAnonymous(cursors[c]); }
WCG_API int32_t wcg_is_bitfield(int32_t c) { return (int32_t)p_clang_Cursor_isBitField(cursors[c]); }
WCG_API int32_t wcg_is_macro_function_like(int32_t c) { return (int32_t)p_clang_Cursor_isMacroFunctionLike(cursors[c]); }
WCG_API const char *wcg_raw_comment(int32_t c) { return take(p_clang_Cursor_getRawCommentText(cursors[c])); }
WCG_API const char *wcg_brief_comment(int32_t c) { return take(p_clang_Cursor_getBriefCommentText(cursors[c])); }

WCG_API int32_t wcg_type_kind(int32_t t) { return types[t].kind; }
WCG_API const char *wcg_type_spelling(int32_t t) { return take(p_clang_getTypeSpelling(types[t])); }
WCG_API int32_t wcg_type_canonical(int32_t t) { return put_type(p_clang_getCanonicalType(types[t])); }
WCG_API int32_t wcg_type_pointee(int32_t t) { return put_type(p_clang_getPointeeType(types[t])); }
WCG_API int32_t wcg_type_result(int32_t t) { return put_type(p_clang_getResultType(types[t])); }
WCG_API int32_t wcg_type_num_args(int32_t t) { return p_clang_getNumArgTypes(types[t]); }
WCG_API int32_t wcg_type_arg(int32_t t, int32_t i) { return put_type(p_clang_getArgType(types[t], (unsigned)i)); }
WCG_API int32_t wcg_type_is_variadic(int32_t t) { return (int32_t)p_clang_isFunctionTypeVariadic(types[t]); }
WCG_API int32_t wcg_type_is_const(int32_t t) { return (int32_t)p_clang_isConstQualifiedType(types[t]); }
WCG_API int64_t wcg_type_sizeof(int32_t t) { return p_clang_Type_getSizeOf(types[t]); }
WCG_API int64_t wcg_type_alignof(int32_t t) { return p_clang_Type_getAlignOf(types[t]); }
WCG_API int64_t wcg_type_array_size(int32_t t) { return p_clang_getArraySize(types[t]); }
WCG_API int32_t wcg_type_element(int32_t t) { return put_type(p_clang_getArrayElementType(types[t])); }
WCG_API int32_t wcg_type_named(int32_t t) { return put_type(p_clang_Type_getNamedType(types[t])); }
WCG_API int32_t wcg_type_declaration(int32_t t) { return put_cursor(p_clang_getTypeDeclaration(types[t])); }
