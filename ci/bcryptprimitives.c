/*
 * A stand-in for Windows' bcryptprimitives.dll, for running tests under Wine 8.
 *
 * Rust's standard library (1.78 and later) gets random bytes on Windows from
 * bcryptprimitives!ProcessPrng, which Wine 8.0 does not ship. This DLL exports
 * ProcessPrng and fills the buffer with advapi32!SystemFunction036 (RtlGenRandom),
 * which Wine does implement. Only for ci/cross-check.sh; never shipped.
 *
 * ProcessPrng: https://learn.microsoft.com/windows/win32/seccng/processprng
 * RtlGenRandom: https://learn.microsoft.com/windows/win32/api/ntsecapi/nf-ntsecapi-rtlgenrandom
 */
#include <windows.h>

/* Declared here rather than through <ntsecapi.h>, which only offers the RtlGenRandom macro. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* Documented to always succeed; RtlGenRandom takes a ULONG length, so feed it in pieces. */
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    const SIZE_T piece_max = 1u << 30;
    while (length > 0) {
        ULONG piece = (ULONG)(length < piece_max ? length : piece_max);
        if (!SystemFunction036(data, piece))
            return FALSE;
        data += piece;
        length -= piece;
    }
    return TRUE;
}
