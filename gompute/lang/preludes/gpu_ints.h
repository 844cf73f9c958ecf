// gompute's fixed-width integers for the GPU compilers (NVRTC, hiprtc), which have no C headers.
// hiprtc's built-in header declares uint32_t, uint64_t, int32_t and int64_t itself up to ROCm 6
// (as unsigned int, unsigned long long, int, long long) and none of them from ROCm 7 on. C++
// allows a typedef to be repeated only with the same type, so each width is spelled here as
// hiprtc spells it: clang's own __INT64_TYPE__ is long, which would clash.
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
static_assert(sizeof(int64_t) == 8 && sizeof(int32_t) == 4 && sizeof(int16_t) == 2, "fixed-width integers");
