package io.raftlock;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** The lock-name rule, checked before a name is sent (the server checks the same rule). */
public final class Names {
    /** The message of every refusal, the same text as the server's and the other clients'. */
    public static final String RULE = "invalid lock name: a name is 1 to 512 bytes of UTF-8, segments separated by \"/\", "
            + "with no empty segment, no \".\" or \"..\" segment, and no control characters";

    /** The longest name, in bytes of UTF-8. */
    public static final int MAX_BYTES = 512;

    private Names() {}

    /** Whether {@code name} is a valid name of a lock, semaphore, election or lockset member. */
    public static boolean isValid(String name) {
        if (name == null || name.isEmpty()) {
            return false;
        }
        byte[] b;
        try {
            // Strict encoding: a lone surrogate is not UTF-8.
            ByteBuffer bb = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(java.nio.CharBuffer.wrap(name));
            b = new byte[bb.remaining()];
            bb.get(b);
        } catch (CharacterCodingException e) {
            return false;
        }
        if (b.length > MAX_BYTES) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c <= 0x1f || (c >= 0x7f && c <= 0x9f)) {
                return false;
            }
        }
        for (String seg : name.split("/", -1)) {
            if (seg.isEmpty() || seg.equals(".") || seg.equals("..")) {
                return false;
            }
        }
        return true;
    }

    /** Throws {@link InvalidNameException} with {@link #RULE} when {@code name} is not valid. */
    public static void check(String name) {
        if (!isValid(name)) {
            throw new InvalidNameException(RULE);
        }
    }
}
