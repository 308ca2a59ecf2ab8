// Windows (mingw) only, compiled into the base DLL. With no dllexport in the headers, lld
// exports every global symbol of the DLL (MinGW auto-export), including the CRT's `atexit`
// that zig's startup code defines; every CPU-variant DLL that links against the base then
// sees `atexit` twice (its own dllcrt2 and the base's import library) and fails to link.
// An -exclude-symbols directive keeps auto-export for the API but leaves the CRT alone.
#if defined(_WIN32) && defined(__MINGW32__)
__asm__(".section .drectve\n\t.ascii \" -exclude-symbols:atexit\"\n\t.text");
#endif
