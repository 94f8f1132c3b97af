package io.raftlock;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/** SSLContexts from the PEM files `raftlock tls` writes. */
public final class Tls {
    private Tls() {}

    /**
     * A context that trusts the CA certificates in {@code caPem} (the JDK's roots when null)
     * and presents the client certificate {@code certPem} with its PKCS#8 key {@code keyPem}
     * ("BEGIN PRIVATE KEY", as `raftlock tls cert --client` writes) when both are given.
     */
    public static SSLContext fromPem(Path caPem, Path certPem, Path keyPem) throws IOException, GeneralSecurityException {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        TrustManagerFactory tmf = null;
        if (caPem != null) {
            KeyStore ts = KeyStore.getInstance(KeyStore.getDefaultType());
            ts.load(null, null);
            int i = 0;
            for (Certificate c : cf.generateCertificates(new ByteArrayInputStream(Files.readAllBytes(caPem)))) {
                ts.setCertificateEntry("ca" + i++, c);
            }
            tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ts);
        }
        KeyManagerFactory kmf = null;
        if (certPem != null && keyPem != null) {
            Collection<? extends Certificate> chain = cf.generateCertificates(new ByteArrayInputStream(Files.readAllBytes(certPem)));
            PrivateKey key = pkcs8(Files.readString(keyPem, StandardCharsets.US_ASCII));
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            char[] pw = new char[0];
            ks.setKeyEntry("client", key, pw, chain.toArray(new Certificate[0]));
            kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, pw);
        }
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf == null ? null : tmf.getTrustManagers(), null);
        return ctx;
    }

    private static PrivateKey pkcs8(String pem) throws GeneralSecurityException {
        String begin = "-----BEGIN PRIVATE KEY-----";
        int a = pem.indexOf(begin);
        int b = pem.indexOf("-----END PRIVATE KEY-----");
        if (a < 0 || b < 0) {
            throw new GeneralSecurityException("the key file holds no PKCS#8 \"PRIVATE KEY\" block");
        }
        byte[] der = Base64.getMimeDecoder().decode(pem.substring(a + begin.length(), b));
        List<String> algs = new ArrayList<>(List.of("EC", "RSA", "Ed25519"));
        for (String alg : algs) {
            try {
                return KeyFactory.getInstance(alg).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // try the next algorithm
            }
        }
        throw new GeneralSecurityException("the PKCS#8 key is not EC, RSA or Ed25519");
    }
}
