/* net-snmp session set-up for configured devices (see snmp_session.h). */
#include "snmp_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

void *snmp_session_open(const struct cfg_device *cd, char *err, size_t errlen)
{
    const struct cfg_snmp *c = &cd->snmp;
    const char *name = cd->name;
    netsnmp_session s;
    snmp_sess_init(&s);
    s.peername = c->address;
    s.timeout = (long)(c->timeout_ms > 0 ? c->timeout_ms : 2000) * 1000L;
    s.retries = c->retries >= 0 ? c->retries : 1;
    if (c->version == 3) {
        s.version = SNMP_VERSION_3;
        s.flags |= SNMP_FLAGS_DONT_PROBE; /* the poller discovers it asynchronously */
        s.securityName = c->user;
        s.securityNameLen = c->user ? strlen(c->user) : 0;
        const char *lvl = c->security_level ? c->security_level : "authPriv";
        if (strcmp(lvl, "noAuthNoPriv") == 0)
            s.securityLevel = SNMP_SEC_LEVEL_NOAUTH;
        else if (strcmp(lvl, "authNoPriv") == 0)
            s.securityLevel = SNMP_SEC_LEVEL_AUTHNOPRIV;
        else
            s.securityLevel = SNMP_SEC_LEVEL_AUTHPRIV;
        const char *ap = c->auth_protocol ? c->auth_protocol : "SHA";
        if (strcmp(ap, "SHA") == 0) {
            s.securityAuthProto = usmHMACSHA1AuthProtocol;
            s.securityAuthProtoLen = OID_LENGTH(usmHMACSHA1AuthProtocol);
        } else if (strcmp(ap, "SHA-256") == 0) {
            s.securityAuthProto = usmHMAC192SHA256AuthProtocol;
            s.securityAuthProtoLen = OID_LENGTH(usmHMAC192SHA256AuthProtocol);
        } else if (strcmp(ap, "SHA-224") == 0) {
            s.securityAuthProto = usmHMAC128SHA224AuthProtocol;
            s.securityAuthProtoLen = OID_LENGTH(usmHMAC128SHA224AuthProtocol);
        } else if (strcmp(ap, "SHA-384") == 0) {
            s.securityAuthProto = usmHMAC256SHA384AuthProtocol;
            s.securityAuthProtoLen = OID_LENGTH(usmHMAC256SHA384AuthProtocol);
        } else if (strcmp(ap, "SHA-512") == 0) {
            s.securityAuthProto = usmHMAC384SHA512AuthProtocol;
            s.securityAuthProtoLen = OID_LENGTH(usmHMAC384SHA512AuthProtocol);
        } else if (strcmp(ap, "MD5") == 0) {
            s.securityAuthProto = usmHMACMD5AuthProtocol;
            s.securityAuthProtoLen = OID_LENGTH(usmHMACMD5AuthProtocol);
        } else {
            snprintf(err, errlen, "device %s: unknown auth_protocol \"%s\"", name, ap);
            return NULL;
        }
        const char *pp = c->priv_protocol ? c->priv_protocol : "AES";
        if (strcmp(pp, "AES") == 0) {
            s.securityPrivProto = usmAESPrivProtocol;
            s.securityPrivProtoLen = OID_LENGTH(usmAESPrivProtocol);
        } else if (strcmp(pp, "AES-192") == 0) {
            s.securityPrivProto = usmAES192PrivProtocol;
            s.securityPrivProtoLen = OID_LENGTH(usmAES192PrivProtocol);
        } else if (strcmp(pp, "AES-256") == 0) {
            s.securityPrivProto = usmAES256PrivProtocol;
            s.securityPrivProtoLen = OID_LENGTH(usmAES256PrivProtocol);
        } else if (strcmp(pp, "DES") == 0) {
            s.securityPrivProto = usmDESPrivProtocol;
            s.securityPrivProtoLen = OID_LENGTH(usmDESPrivProtocol);
        } else {
            snprintf(err, errlen, "device %s: unknown priv_protocol \"%s\"", name, pp);
            return NULL;
        }
        if (s.securityLevel != SNMP_SEC_LEVEL_NOAUTH) {
            if (!c->auth_password || strlen(c->auth_password) < 8) {
                snprintf(err, errlen, "device %s: auth password missing or shorter than 8", name);
                return NULL;
            }
            s.securityAuthKeyLen = USM_AUTH_KU_LEN;
            if (generate_Ku(s.securityAuthProto, (u_int)s.securityAuthProtoLen,
                            (const u_char *)c->auth_password, strlen(c->auth_password),
                            s.securityAuthKey, &s.securityAuthKeyLen) != SNMPERR_SUCCESS) {
                snprintf(err, errlen, "device %s: cannot derive the auth key", name);
                return NULL;
            }
        }
        if (s.securityLevel == SNMP_SEC_LEVEL_AUTHPRIV) {
            if (!c->priv_password || strlen(c->priv_password) < 8) {
                snprintf(err, errlen, "device %s: priv password missing or shorter than 8", name);
                return NULL;
            }
            s.securityPrivKeyLen = USM_PRIV_KU_LEN;
            if (generate_Ku(s.securityAuthProto, (u_int)s.securityAuthProtoLen,
                            (const u_char *)c->priv_password, strlen(c->priv_password),
                            s.securityPrivKey, &s.securityPrivKeyLen) != SNMPERR_SUCCESS) {
                snprintf(err, errlen, "device %s: cannot derive the priv key", name);
                return NULL;
            }
        }
    } else {
        s.version = c->version == 1 ? SNMP_VERSION_1 : SNMP_VERSION_2c;
        if (!c->community) {
            snprintf(err, errlen, "device %s: no SNMP community (community_file)", name);
            return NULL;
        }
        s.community = (u_char *)c->community;
        s.community_len = strlen(c->community);
    }
    void *sess = snmp_sess_open(&s);
    if (!sess) {
        int liberr = 0, snmperr = 0;
        char *errstr = NULL;
        snmp_error(&s, &liberr, &snmperr, &errstr);
        snprintf(err, errlen, "device %s: cannot open SNMP session to %s: %s", name, c->address,
                 errstr ? errstr : "unknown error");
        free(errstr);
        return NULL;
    }
    if (c->version == 3) /* the open copies the session; the flag must be on the copy */
        snmp_sess_session(sess)->flags |= SNMP_FLAGS_DONT_PROBE;
    return sess;
}

static int g_inited;

void snmp_session_lib_init(void)
{
    if (g_inited++)
        return;
    /* numeric OIDs only (Debian ships no MIBs); no persistent state under /var/lib/snmp */
    setenv("MIBS", "", 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DONT_PERSIST_STATE, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_LOAD, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_PERSISTENT_SAVE, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_DISABLE_CONFIG_LOAD, 1);
    netsnmp_ds_set_boolean(NETSNMP_DS_LIBRARY_ID, NETSNMP_DS_LIB_QUICK_PRINT, 1);
    init_snmp("wanledger");
}

void snmp_session_lib_shutdown(void)
{
    if (--g_inited == 0)
        snmp_shutdown("wanledger");
}
