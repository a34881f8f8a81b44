// vec_undef.h: ends one vector width's instantiation of vec_exp.h and
// vec_conv.h in shim.c, undefining the parameters it defined.
#undef W
#undef RMAX
#undef VF
#undef VI
#undef VEC
#undef LOADW
#undef STOREW
#undef SPLATW
#undef PICKW
#undef HSUMW
#undef FMSW
