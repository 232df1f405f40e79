/* HTTP reason phrases (see http_reason.h). */
#include "http_reason.h"

#include <stddef.h>

const char *http_reason(int status)
{
    static const struct {
        int status;
        const char *reason;
    } table[] = {
        {200, "OK"},
        {201, "Created"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {408, "Request Timeout"},
        {409, "Conflict"},
        {411, "Length Required"},
        {413, "Payload Too Large"},
        {415, "Unsupported Media Type"},
        {422, "Unprocessable Entity"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {503, "Service Unavailable"},
        {505, "HTTP Version Not Supported"},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].status == status)
            return table[i].reason;
    return "Status";
}
