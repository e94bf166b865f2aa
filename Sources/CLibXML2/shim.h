#ifndef MEDIAROUTE_CLIBXML2_SHIM_H
#define MEDIAROUTE_CLIBXML2_SHIM_H
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#endif
